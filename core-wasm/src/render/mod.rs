//! kpt's `fn render`, in memory: a package's files in, the rendered files,
//! the Kptfile's `Rendered` condition and `renderStatus`, and the results
//! out. Functions that are not builtins run through a [`FunctionRuntime`]
//! the caller provides (the host's wasm and exec runtimes); the component,
//! which has no imports, uses a [`RecordedRuntime`] and asks its host for
//! one function's output at a time.

pub mod annotations;
pub mod builtins;
mod executor;
mod function;
pub mod image;
pub mod kptfile;
pub mod krmignore;
pub mod package;
pub mod result;
mod runtime;
mod select;

#[cfg(test)]
mod bfs_tests;
#[cfg(test)]
mod conditions_tests;

pub use executor::{
    render, render_owned, RenderFailure, RenderOptions, RenderOutput, ResultListItem, StepRecord,
};
pub use package::Files;
pub use result::FnResult;
pub use runtime::{
    BuiltinsOnly, FunctionRef, FunctionRuntime, RecordedRuntime, RunOutput, RuntimeError,
};
