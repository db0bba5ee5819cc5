//! Conformance adapters: pv decisions groups.

use super::{Adapter, Deviation};

/// The groups this module runs.
pub fn adapters() -> Vec<(&'static str, Adapter)> {
    Vec::new()
}

/// Documented deviations of these groups.
pub const DEVIATIONS: &[Deviation] = &[];
