//! The KRM layer the controllers and the libraries share: reading and
//! writing a file's KRM objects as the kpt function SDK does
//! ([`objects`]) and the CEL environment of PackageVariantSet expressions
//! and render conditions ([`cel`]), and what a Kptfile says of a
//! revision's readiness, locks and metadata ([`readiness`]). It imports only the API and YAML
//! layers, never a controller (`prc`, `repo`, `variant`, `variantset`) or
//! `render`/`merge`, which import it.

pub mod cel;
pub mod gofmt;
pub mod objects;
pub mod readiness;
