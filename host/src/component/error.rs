//! Why a call into the component produced no answer.

use std::time::Duration;

/// A call into the component failed at the runtime level: the guest was
/// stopped, trapped, or could not be set up. Domain failures (invalid
/// input, a mutation or render error) are not this type: they are the
/// guest's answer, returned in the inner `Result` of each call.
///
/// After any of these the instance is discarded; the next call gets a new
/// one, so the engine stays usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    /// The call used up its fuel (an instruction budget): the input made
    /// the core work far longer than any real package needs.
    #[error("the package-editing component ran out of fuel ({fuel} units) and was stopped")]
    OutOfFuel {
        /// The budget of one call.
        fuel: u64,
    },
    /// The guest asked for more linear memory than one call may use.
    #[error(
        "the package-editing component needed {requested} bytes of memory, more than the limit of {limit} bytes, and was stopped"
    )]
    MemoryLimit {
        /// Bytes the guest tried to grow its memory to.
        requested: usize,
        /// The limit of one call.
        limit: usize,
    },
    /// The call ran past its wall-clock deadline (epoch interruption).
    #[error("the package-editing component ran longer than {}ms and was stopped", .after.as_millis())]
    Timeout {
        /// The deadline of one call.
        after: Duration,
    },
    /// The guest trapped (a panic in the core, or a WebAssembly fault).
    #[error("the package-editing component trapped: {0}")]
    Trap(String),
    /// The component could not be compiled or instantiated.
    #[error("the package-editing component could not be started: {0}")]
    Instantiate(String),
}

impl ComponentError {
    /// A `reason` for a Kubernetes condition (CamelCase, stable).
    pub fn reason(&self) -> &'static str {
        match self {
            ComponentError::OutOfFuel { .. } => "ComponentOutOfFuel",
            ComponentError::MemoryLimit { .. } => "ComponentMemoryLimit",
            ComponentError::Timeout { .. } => "ComponentTimeout",
            ComponentError::Trap(_) => "ComponentTrap",
            ComponentError::Instantiate(_) => "ComponentUnavailable",
        }
    }

    /// Whether retrying the same input can succeed (only a failure to start
    /// the component; the others are deterministic for a given input, except
    /// a timeout on a loaded machine).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ComponentError::Instantiate(_) | ComponentError::Timeout { .. }
        )
    }
}
