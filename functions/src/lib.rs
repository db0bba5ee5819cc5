//! kpt function front-ends over the porch-variants core: they read a KRM
//! `ResourceList` on stdin and write one on stdout, following the KRM
//! Functions Specification. All package logic is `pv_core`'s; this crate
//! only maps items to files and back, picks the objects that stand in for
//! in-cluster resources, and reports results.
//!
//! * [`apply`] — `apply-package-variant`: the functionConfig is a
//!   PackageVariant; its three mutations (package context, pipeline, config
//!   injection) are applied to the package.
//! * [`render`] — `render-package-variant-set`: the functionConfig is a
//!   PackageVariantSet; its PackageVariants are generated.
//!
//! Both are plain functions from input text to [`Output`], so the native
//! binaries, the kpt-ABI wasm modules and the tests run the same code.

// Errors here are results reported to the user (a `ResultItem`, as large as
// the spec makes it), built once per failure and never on a hot path.
#![allow(clippy::result_large_err)]

pub mod annotations;
pub mod apply;
pub mod config;
pub mod package;
pub mod render;
pub mod resource_list;
pub mod results;

use pv_core::api::ResultItem;
use pv_core::yaml::Node;

/// What a function run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The output ResourceList (written even when the run failed).
    pub resource_list: String,
    /// The results it carries.
    pub results: Vec<ResultItem>,
}

impl Output {
    /// The output of a run: `items` (the input's document, when it could be
    /// read, around them) and `results`, plus an error result when the
    /// ResourceList cannot be written ([`resource_list::write`]).
    pub fn new(
        input: Option<resource_list::Input>,
        items: Vec<Node>,
        mut results: Vec<ResultItem>,
    ) -> Output {
        let resource_list = resource_list::write(input, items, &mut results);
        Output {
            resource_list,
            results,
        }
    }

    /// Whether an error result was reported (the run failed).
    pub fn failed(&self) -> bool {
        results::has_errors(&self.results)
    }

    /// How many error results were reported.
    pub fn error_count(&self) -> usize {
        self.results.iter().filter(|r| r.is_error()).count()
    }

    /// The process exit code: 1 when the run failed, else 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.failed())
    }

    /// One line per error result (empty when the run succeeded).
    pub fn error_summary(&self) -> String {
        results::error_summary(&self.results)
    }
}

/// The functions this crate provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `apply-package-variant`.
    ApplyPackageVariant,
    /// `render-package-variant-set`.
    RenderPackageVariantSet,
}

impl Function {
    /// Every function.
    pub const ALL: [Function; 2] = [
        Function::ApplyPackageVariant,
        Function::RenderPackageVariantSet,
    ];

    /// The function's name (also its binary's and wasm module's name).
    pub fn name(self) -> &'static str {
        match self {
            Function::ApplyPackageVariant => apply::NAME,
            Function::RenderPackageVariantSet => render::NAME,
        }
    }

    /// The function with that name.
    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Runs the function on a ResourceList.
    pub fn run(self, input: &str) -> Output {
        match self {
            Function::ApplyPackageVariant => apply::process(input),
            Function::RenderPackageVariantSet => render::process(input),
        }
    }
}

/// Runs `function` as a command: the ResourceList from `stdin`, the output
/// ResourceList to `stdout` (always), error results summarised on `stderr`;
/// returns the exit code. Input that is not UTF-8 is an error result.
pub fn main_with(
    function: Function,
    stdin: &mut dyn std::io::Read,
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
) -> i32 {
    let mut bytes = Vec::new();
    let output = match stdin.read_to_end(&mut bytes) {
        Err(e) => failure(format!("cannot read standard input: {e}")),
        Ok(_) => match String::from_utf8(bytes) {
            Ok(text) => function.run(&text),
            Err(e) => failure(format!("the input is not UTF-8: {e}")),
        },
    };
    let written = stdout
        .write_all(output.resource_list.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(e) = written {
        // Nothing else can be reported on stdout; say it on stderr.
        let _ = writeln!(
            stderr,
            "{}: cannot write standard output: {e}",
            function.name()
        );
        return 1;
    }
    let _ = stderr.write_all(output.error_summary().as_bytes());
    output.exit_code()
}

/// An output with no items and one error result.
pub fn failure(message: String) -> Output {
    Output::new(None, Vec::new(), vec![results::error(message)])
}
