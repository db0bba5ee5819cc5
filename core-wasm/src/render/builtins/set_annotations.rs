//! The catalog's `set-annotations` function.

use super::{FnInput, FnOutput};

/// Runs `set-annotations` on the items.
pub fn run(input: FnInput) -> FnOutput {
    FnOutput {
        items: input.items,
        failure: Some("set-annotations: not implemented".to_string()),
        ..FnOutput::default()
    }
}
