//! Pure package-editing logic of porch-variants.
//!
//! Everything here is free of I/O so that the same code runs natively (tests,
//! benchmarks, the host controller) and inside the WebAssembly component.
//!
//! * [`yaml`] — a lossless YAML layer that parses and writes YAML exactly as
//!   Go's `gopkg.in/yaml.v3` does under kyaml (comments, key order, scalar
//!   styles), with an editing API modelled on kyaml's `RNode` and the kpt
//!   function SDK's `KubeObject`.

pub mod api;
pub mod approval;
pub mod krm;
pub mod merge;
pub mod prc;
pub mod render;
mod replay;
pub mod repo;
pub mod time;
pub mod variant;
pub mod variantset;
pub mod yaml;
