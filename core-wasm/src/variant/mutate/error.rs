//! Errors of the mutations, worded as upstream words them where upstream has
//! an error for the case (Porch's `packagevariant_controller.go` and
//! `injection.go`), and naming the file, object and field otherwise.

use crate::yaml::YamlError;

use crate::krm::gofmt::quote;

pub use crate::krm::objects::ObjectsError;

/// An error of a mutation. Every variant names the PackageRevisionResources
/// (`<namespace>/<name>`) or the file it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutationError {
    /// The PackageRevisionResources carried no `resources` map.
    #[error("nil resources found for PackageRevisionResources '{prr}'")]
    NilResources {
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
    },
    /// A file the mutation needs is absent.
    #[error("{} not found in PackageRevisionResources '{prr}'", quote(file))]
    FileNotFound {
        /// The missing file.
        file: String,
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
    },
    /// A file the mutation needs is not one KRM object.
    #[error(
        "failed to parse {} of PackageRevisionResources {prr}: {source}",
        quote(file)
    )]
    FileParse {
        /// The file.
        file: String,
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
        /// What is wrong with it.
        source: ObjectsError,
    },
    /// The object of a file has another kind than required.
    #[error(
        "{} does not contain kind {} in PackageRevisionResources '{prr}'",
        quote(file),
        quote(kind)
    )]
    KindMismatch {
        /// The file.
        file: String,
        /// The required kind.
        kind: String,
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
    },
    /// The object of a file has another name than required.
    #[error(
        "{} does not contain resource named {} in PackageRevisionResources '{prr}'",
        quote(file),
        quote(name)
    )]
    NameMismatch {
        /// The file.
        file: String,
        /// The required `metadata.name`.
        name: String,
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
    },
    /// `package-context.yaml` has no `data` field.
    #[error("PackageRevisionResources {prr} PackageContext no data field found")]
    NoDataField {
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
    },
    /// `package-context.yaml`'s `data` is not a map of strings.
    #[error("PackageRevisionResources {prr} PackageContext invalid data field: {detail}")]
    InvalidDataField {
        /// `<namespace>/<name>` of the PackageRevisionResources.
        prr: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A resource file of the package is not a stream of KRM objects
    /// (upstream's `parseFiles`: `<file>: <error>`).
    #[error("{file}: {source}")]
    ResourceParse {
        /// The file.
        file: String,
        /// What is wrong with it.
        source: ObjectsError,
    },
    /// Injection points are invalid or ambiguous (upstream's
    /// `validateInjectionPoints`).
    #[error("errors in injection points: {}", errors.join(", "))]
    InjectionPoints {
        /// Every error, in file order.
        errors: Vec<String>,
    },
    /// A field of a file does not have the type kpt's schema gives it.
    #[error("{file}: field {field}: {detail}")]
    FieldType {
        /// The file (`Kptfile`, …).
        file: String,
        /// Dotted path of the field (`pipeline.mutators[2]`).
        field: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The YAML layer refused an edit or could not write a file.
    #[error("{file}: {source}")]
    Yaml {
        /// The file being edited or written.
        file: String,
        /// The YAML layer's error.
        source: Box<YamlError>,
    },
}

impl From<YamlError> for ObjectsError {
    fn from(e: YamlError) -> Self {
        ObjectsError::Yaml(Box::new(e))
    }
}

impl MutationError {
    /// Wraps a YAML-layer error with the file it happened in.
    pub(crate) fn yaml(file: &str) -> impl FnOnce(YamlError) -> MutationError + '_ {
        move |source| MutationError::Yaml {
            file: file.to_string(),
            source: Box::new(source),
        }
    }
}
