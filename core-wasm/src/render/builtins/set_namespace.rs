//! The catalog's `set-namespace` function.

use super::{FnInput, FnOutput};

/// Runs `set-namespace` on the items.
pub fn run(input: FnInput) -> FnOutput {
    FnOutput {
        items: input.items,
        failure: Some("set-namespace: not implemented".to_string()),
        ..FnOutput::default()
    }
}
