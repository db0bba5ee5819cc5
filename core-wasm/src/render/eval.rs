//! kpt's `fn eval`: one function over a package's resources, its
//! subpackages' and the Kptfiles included (kpt's default since meta
//! resources became input), without the
//! packages' pipelines and without a render status. The function runs as a pipeline step does (selectors,
//! exclusions, results, the same runtimes), and its output is written
//! back to the files as render writes it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::api::Function;
use crate::yaml;

use super::executor::{
    failed_before_running as failed, write_items, RenderFailure, RenderOptions, RenderOutput, Walk,
};
use super::kptfile::KptfileInfo;
use super::package::Files;
use super::runtime::FunctionRuntime;

/// What `kpt fn eval` runs, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalSpec {
    /// The function: `image` or `exec`, `configMap` (kpt's
    /// `-- key=value`), `selectors` and `exclude` (`--match-*`,
    /// `--exclude-*`).
    pub function: Function,
    /// The text of the function config (`--fn-config`), if any. A config
    /// file that lies in the package is also input, as kpt reads it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fn_config: String,
}

/// Runs `spec`'s function over the resources of the package in `files`
/// (every file below the root that kpt reads, `.krmignore` kept), writing
/// its output back; nothing is written when it fails.
pub(super) fn eval_owned(
    files: Files,
    opts: &RenderOptions,
    spec: &EvalSpec,
    runtime: &mut dyn FunctionRuntime,
) -> RenderOutput {
    let out = RenderOutput::default();
    let config = if spec.fn_config.is_empty() {
        None
    } else {
        match yaml::parse_document(&spec.fn_config) {
            Ok(doc) if doc.root().kind == yaml::Kind::Mapping => Some(doc),
            Ok(_) => return failed(out, files, "invalid function config: not a mapping".into()),
            Err(e) => return failed(out, files, format!("invalid function config: {e}")),
        }
    };
    let mut walk = Walk::new(&files, BTreeSet::from([String::new()]), opts, runtime);
    walk.eval_config = config;
    let read = match walk.local_resources("") {
        Ok(items) => items,
        Err(e) => {
            let cause = e.cause;
            drop(walk);
            return failed(out, files, cause);
        }
    };
    let input = read;
    let info = KptfileInfo {
        mutators: vec![spec.function.clone()],
        ..KptfileInfo::default()
    };
    let result = walk.run_pipeline("", &info, input);
    let mut out = out;
    out.pending = walk.pending;
    out.log = std::mem::take(&mut walk.log);
    out.results = std::mem::take(&mut walk.results);
    let input_files = std::mem::take(&mut walk.input_files);
    drop(walk);
    out.files = files;
    if out.pending {
        return out;
    }
    match result {
        Ok(items) => {
            if let Err(e) = write_items(&mut out.files, items, &opts.root_path, &input_files, true)
            {
                let files = std::mem::take(&mut out.files);
                return failed(out, files, e);
            }
        }
        Err(e) => {
            out.failure = Some(RenderFailure {
                message: e.cause.clone(),
                detail: e.cause.clone(),
                cause: e.cause,
                handled: e.handled,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::BuiltinsOnly;

    fn package() -> Files {
        let kptfile = |name: &str| {
            format!("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: {name}\n")
        };
        let cm =
            |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n");
        Files::from([
            ("Kptfile".to_string(), kptfile("root")),
            ("cm.yaml".to_string(), cm("a")),
            ("sub/Kptfile".to_string(), kptfile("sub")),
            ("sub/cm.yaml".to_string(), cm("b")),
            (
                "fn-config.yaml".to_string(),
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  team: x\n"
                    .to_string(),
            ),
        ])
    }

    fn eval(spec: EvalSpec) -> RenderOutput {
        let opts = RenderOptions {
            eval: Some(spec),
            ..RenderOptions::default()
        };
        super::super::render(&package(), &opts, &mut BuiltinsOnly)
    }

    fn set_labels() -> Function {
        Function {
            image: "set-labels:v0.2".into(),
            ..Function::default()
        }
    }

    #[test]
    fn subpackages_and_meta_resources_are_input() {
        let before = package();
        let out = eval(EvalSpec {
            function: Function {
                config_map: [("team".to_string(), "x".to_string())].into(),
                ..set_labels()
            },
            ..EvalSpec::default()
        });
        assert_eq!(out.failure, None);
        // Without --fn-config, fn-config.yaml is a resource like another.
        for changed in [
            "cm.yaml",
            "sub/cm.yaml",
            "fn-config.yaml",
            "Kptfile",
            "sub/Kptfile",
        ] {
            assert!(
                out.files[changed].contains("labels:\n    team: x"),
                "{}",
                out.files[changed]
            );
            assert_ne!(out.files[changed], before[changed], "{changed}");
        }
        assert!(out.summary.is_empty(), "{}", out.summary);
    }

    #[test]
    fn the_config_file_configures() {
        let spec = EvalSpec {
            function: set_labels(),
            fn_config: package()["fn-config.yaml"].clone(),
        };
        let out = eval(spec);
        assert_eq!(out.failure, None);
        for changed in ["Kptfile", "sub/Kptfile", "cm.yaml", "fn-config.yaml"] {
            assert!(
                out.files[changed].contains("team: x"),
                "{changed}: {}",
                out.files[changed]
            );
        }
    }

    #[test]
    fn selectors_pick_and_a_failure_writes_nothing() {
        let out = eval(EvalSpec {
            function: Function {
                config_map: [("team".to_string(), "x".to_string())].into(),
                selectors: vec![crate::api::Selector {
                    name: "b".into(),
                    ..Default::default()
                }],
                ..set_labels()
            },
            ..EvalSpec::default()
        });
        assert!(out.files["sub/cm.yaml"].contains("team: x"));
        assert_eq!(out.files["cm.yaml"], package()["cm.yaml"]);
        let out = eval(EvalSpec {
            function: Function {
                image: "no-such-function:v1".into(),
                ..Function::default()
            },
            ..EvalSpec::default()
        });
        assert!(out.failure.is_some());
        assert_eq!(out.files, package());
    }
}
