//! The catalog's `set-labels` function.

use super::{FnInput, FnOutput};

/// Runs `set-labels` on the items.
pub fn run(input: FnInput) -> FnOutput {
    FnOutput {
        items: input.items,
        failure: Some("set-labels: not implemented".to_string()),
        ..FnOutput::default()
    }
}
