//! The porch-variants host: runs the package-editing component (see
//! [`component`]) for the controllers and the command line.

pub mod clock;
pub mod component;
pub mod crd;
pub mod engine_api;
pub mod fn_render;
pub mod function_runner;
pub mod kube;
pub mod local;
pub mod output;
pub mod package_dir;
pub mod prc;
pub mod reconcile;
pub mod runtime;
pub mod store;
mod wasm_engine;
