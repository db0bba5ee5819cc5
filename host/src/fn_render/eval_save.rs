//! `fn eval --save --type mutator|validator`: after a successful
//! evaluation, the function and its config go into the package's Kptfile
//! pipeline, as kpt's `fn eval --save` puts them: an entry with the same
//! image (or exec) is replaced, otherwise one is appended; the rest of the
//! Kptfile, comments included, is kept.

use std::path::{Path, PathBuf};

use pv_core::api::Function;
use pv_core::yaml::{self, Kind, Node};

/// Which list of the pipeline the function goes in (kpt's `--type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FnType {
    /// `pipeline.mutators`.
    Mutator,
    /// `pipeline.validators`.
    Validator,
}

impl FnType {
    fn key(self) -> &'static str {
        match self {
            FnType::Mutator => "mutators",
            FnType::Validator => "validators",
        }
    }

    fn word(self) -> &'static str {
        match self {
            FnType::Mutator => "mutator",
            FnType::Validator => "validator",
        }
    }
}

/// Why the function could not be saved.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// `--save` without `--type` (kpt's words).
    #[error("--type must be specified if saving functions to Kptfile (--save=true)")]
    NoType,
    /// `--fn-config` lies outside the package (kpt's words).
    #[error("--fn-config must be under {0} if saving functions to Kptfile (--save=true)")]
    ConfigOutside(PathBuf),
    /// The package has no Kptfile.
    #[error("function not added: Kptfile not exists")]
    NoKptfile,
    /// The Kptfile could not be read, edited or written.
    #[error("function is not added to Kptfile: {0}")]
    Kptfile(String),
}

/// Checks `--save`'s flags before anything runs; returns the config path
/// relative to the package, if any.
pub fn check(
    fn_type: Option<FnType>,
    package: &Path,
    fn_config: Option<&Path>,
) -> Result<Option<String>, SaveError> {
    if fn_type.is_none() {
        return Err(SaveError::NoType);
    }
    let Some(config) = fn_config else {
        return Ok(None);
    };
    let config = config
        .canonicalize()
        .map_err(|e| SaveError::Kptfile(format!("{}: {e}", config.display())))?;
    match config.strip_prefix(package) {
        Ok(rel) => Ok(Some(rel.to_string_lossy().replace('\\', "/"))),
        Err(_) => Err(SaveError::ConfigOutside(package.to_path_buf())),
    }
}

/// Adds `function` to the Kptfile in `package` as `fn_type`; returns the
/// line kpt prints (`Added "IMAGE" as mutator in the Kptfile.`).
pub fn save(package: &Path, fn_type: FnType, function: &Function) -> Result<String, SaveError> {
    let path = package.join("Kptfile");
    // Only a regular file: a link is not followed.
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_file() => {}
        Ok(_) => {
            return Err(SaveError::Kptfile(
                "the Kptfile is not a regular file".into(),
            ))
        }
        Err(_) => return Err(SaveError::NoKptfile),
    }
    let text = std::fs::read_to_string(&path).map_err(|e| SaveError::Kptfile(e.to_string()))?;
    let (new_text, message) = add_function(&text, fn_type, function)?;
    let before = std::collections::BTreeMap::from([("Kptfile".to_string(), text)]);
    let after = std::collections::BTreeMap::from([("Kptfile".to_string(), new_text)]);
    crate::package_dir::write_changes(package, &before, &after)
        .map_err(|e| SaveError::Kptfile(e.to_string()))?;
    Ok(message)
}

/// The Kptfile `text` with `function` added; and kpt's line saying so.
fn add_function(
    text: &str,
    fn_type: FnType,
    function: &Function,
) -> Result<(String, String), SaveError> {
    let bad = |e: yaml::YamlError| SaveError::Kptfile(e.to_string());
    let mut doc = yaml::parse_document(text).map_err(bad)?;
    let value = serde_json::to_value(function).map_err(|e| SaveError::Kptfile(e.to_string()))?;
    let entry = yaml::from_json(&value);
    let root = doc.root_mut();
    if root.kind != Kind::Mapping {
        return Err(SaveError::Kptfile("the Kptfile is not a mapping".into()));
    }
    let pipeline = root.upsert_map("pipeline").map_err(bad)?;
    if !pipeline
        .get(fn_type.key())
        .is_some_and(|l| l.kind == Kind::Sequence)
    {
        pipeline
            .set(fn_type.key(), Node::new_sequence())
            .map_err(bad)?;
    }
    let Some(list) = pipeline.get_mut(fn_type.key()) else {
        return Err(SaveError::Kptfile("pipeline list missing".into()));
    };
    let same = |n: &Node| {
        (!function.image.is_empty() && n.get_str(&["image"]) == Some(function.image.as_str()))
            || (!function.exec.is_empty() && n.get_str(&["exec"]) == Some(function.exec.as_str()))
    };
    let what = if function.image.is_empty() {
        &function.exec
    } else {
        &function.image
    };
    let verb = match list.content.iter_mut().find(|n| same(n)) {
        Some(existing) => {
            let mut entry = entry;
            entry.copy_comments_from(existing);
            *existing = entry;
            "Updated"
        }
        None => {
            list.content.push(entry);
            "Added"
        }
    };
    let text = yaml::emit_stream(&[doc], yaml::Format::Kyaml).map_err(bad)?;
    Ok((
        text,
        format!("{verb} {what:?} as {} in the Kptfile.", fn_type.word()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_labels() -> Function {
        Function {
            image: "ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2".into(),
            config_map: [("tier".to_string(), "web".to_string())].into(),
            ..Function::default()
        }
    }

    #[test]
    fn a_function_is_appended_keeping_comments_and_replaced_on_a_second_save() {
        let kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app # the app\npipeline:\n  mutators:\n  - image: set-namespace:v0.4 # first\n    configMap:\n      namespace: prod\n";
        let (text, line) = add_function(kptfile, FnType::Mutator, &set_labels()).unwrap();
        assert_eq!(
            line,
            "Added \"ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2\" as mutator in the Kptfile."
        );
        assert!(text.starts_with(
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app # the app\npipeline:\n  mutators:\n  - image: set-namespace:v0.4 # first\n"
        ), "{text}");
        assert!(text.ends_with(
            "  - image: ghcr.io/kptdev/krm-functions-catalog/set-labels:v0.2\n    configMap:\n      tier: web\n"
        ), "{text}");
        let mut again = set_labels();
        again.config_map = [("tier".to_string(), "db".to_string())].into();
        let (text, line) = add_function(&text, FnType::Mutator, &again).unwrap();
        assert!(line.starts_with("Updated"), "{line}");
        assert_eq!(text.matches("set-labels").count(), 1, "{text}");
        assert!(text.contains("tier: db"), "{text}");
    }

    #[test]
    fn a_validator_goes_in_a_new_pipeline_of_a_kptfile_without_one() {
        let (text, _) = add_function(
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
            FnType::Validator,
            &Function {
                exec: "./check.sh".into(),
                ..Function::default()
            },
        )
        .unwrap();
        assert!(
            text.ends_with("pipeline:\n  validators:\n  - exec: ./check.sh\n"),
            "{text}"
        );
    }
}
