//! The catalog's `apply-replacements` function.

use super::{FnInput, FnOutput};

/// Runs `apply-replacements` on the items.
pub fn run(input: FnInput) -> FnOutput {
    FnOutput {
        items: input.items,
        failure: Some("apply-replacements: not implemented".to_string()),
        ..FnOutput::default()
    }
}
