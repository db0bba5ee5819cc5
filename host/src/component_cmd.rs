//! `porch-variants component ...`: facts about the embedded component, and
//! its bytes.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use porch_variants::component::{self, CoreComponent};

/// Subcommands of `porch-variants component`.
#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Print the embedded component's version, size, imports and exports.
    Info,
    /// Write the embedded component's bytes to FILE (e.g. for the browser
    /// playground, which transpiles it with jco).
    Export {
        /// Where to write the component (`.wasm`); parent directories are
        /// created.
        file: PathBuf,
    },
}

/// Runs a `component` subcommand.
pub fn run(command: ComponentCommand) -> Result<ExitCode> {
    match command {
        ComponentCommand::Info => info(),
        ComponentCommand::Export { file } => export(&file),
    }
}

fn export(file: &Path) -> Result<ExitCode> {
    if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(file, component::COMPONENT)
        .with_context(|| format!("writing {}", file.display()))?;
    porch_variants::outln!(
        "wrote {} ({} bytes)",
        file.display(),
        component::COMPONENT.len()
    );
    Ok(ExitCode::SUCCESS)
}

fn info() -> Result<ExitCode> {
    let core = CoreComponent::new()?;
    let version = core.version()?;
    let startup = core.startup();
    porch_variants::outln!("version:  {version}");
    porch_variants::outln!(
        "size:     {} bytes (core module before stripping: {} bytes)",
        startup.component_size,
        component::MODULE_SIZE
    );
    let code = match (startup.code, startup.in_place) {
        (component::CodeSource::Precompiled, true) => {
            "machine code compiled at build time, run where it lies in the binary"
        }
        (component::CodeSource::Precompiled, false) => "machine code compiled at build time",
        (component::CodeSource::Compiled, _) => "compiled at start-up or read from the code cache",
    };
    porch_variants::outln!(
        "load:     {:.1} ms ({code}, and pre-instantiated)",
        startup.load.as_secs_f64() * 1e3
    );
    let imports = core.imports();
    if imports.is_empty() {
        porch_variants::outln!("imports:  none");
    } else {
        porch_variants::outln!("imports:  {}", imports.join(", "));
    }
    porch_variants::outln!("exports:");
    for export in core.exports() {
        porch_variants::outln!(
            "  {}({}){}",
            export.name,
            export.params.join(", "),
            if export.returns { " -> …" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_writes_the_embedded_component() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let file = dir.path().join("nested/dir/core.wasm");
        let code = export(&file).expect("export succeeds");
        assert_eq!(code, ExitCode::SUCCESS);
        let bytes = std::fs::read(&file).expect("the file was written");
        assert_eq!(bytes, component::COMPONENT);
        // A component, not a core module: magic, then version 0x0d, layer 1.
        assert_eq!(&bytes[..8], b"\0asm\x0d\x00\x01\x00");
    }

    #[test]
    fn export_reports_an_unwritable_path() {
        let dir = tempfile::tempdir().expect("temporary directory");
        // The target is an existing directory: writing it must fail.
        let err = export(dir.path()).expect_err("writing a directory fails");
        assert!(err.to_string().contains("writing"), "{err:#}");
    }
}
