//! How render runs functions that are not builtins: through a
//! [`FunctionRuntime`] the caller provides (wasm modules and executables in
//! the host), with kpt's ResourceList protocol.

/// The function to run, as the Kptfile names it (the image resolved).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FunctionRef {
    /// The resolved image (`ghcr.io/.../set-labels:v0.2.2`), or empty.
    pub image: String,
    /// The executable and arguments (`exec:`), or empty.
    pub exec: String,
}

impl FunctionRef {
    /// The image, else the exec string: how kpt names a function in logs.
    pub fn display(&self) -> &str {
        if self.image.is_empty() {
            &self.exec
        } else {
            &self.image
        }
    }
}

/// What a function printed and how it exited.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunOutput {
    /// The ResourceList it wrote.
    pub stdout: String,
    /// What it wrote to stderr.
    pub stderr: String,
    /// Its exit code (0 on success).
    pub exit_code: i32,
}

/// Why a runtime could not run a function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeError {
    /// No runtime has the function (`function "<image>" not found`).
    NotFound,
    /// The runtime failed (a limit, a bad module, a spawn error): the text.
    Failed(String),
    /// The function's answer is not known yet: the component asks its host
    /// to run it and renders again with the answer (see
    /// [`super::RecordedRuntime`]).
    Pending,
}

/// Runs functions that are not builtins.
pub trait FunctionRuntime {
    /// Runs `function` on the serialized ResourceList `input`.
    fn run(&mut self, function: &FunctionRef, input: &str) -> Result<RunOutput, RuntimeError>;
}

/// A runtime that has no function: only builtins run.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinsOnly;

impl FunctionRuntime for BuiltinsOnly {
    fn run(&mut self, _: &FunctionRef, _: &str) -> Result<RunOutput, RuntimeError> {
        Err(RuntimeError::NotFound)
    }
}

/// A runtime that answers from the outputs of earlier runs, in order, and
/// records the first request it cannot answer: a render in the component
/// (which cannot call out) ends there, the host runs the function, and the
/// render starts again with one more answer. Functions are deterministic
/// in their input, so each replayed request equals the one answered.
#[derive(Debug, Clone, Default)]
pub struct RecordedRuntime {
    answers: Vec<Result<RunOutput, Option<String>>>,
    next: usize,
    /// The request no answer was given for.
    pub pending: Option<(FunctionRef, String)>,
}

impl RecordedRuntime {
    /// A runtime answering with `answers`: `Err(None)` for a function the
    /// host does not have, `Err(Some(message))` for a runtime failure.
    pub fn with_answers(answers: Vec<Result<RunOutput, Option<String>>>) -> RecordedRuntime {
        RecordedRuntime {
            answers,
            next: 0,
            pending: None,
        }
    }
}

impl FunctionRuntime for RecordedRuntime {
    fn run(&mut self, function: &FunctionRef, input: &str) -> Result<RunOutput, RuntimeError> {
        match self.answers.get(self.next) {
            Some(answer) => {
                self.next += 1;
                answer.clone().map_err(|e| match e {
                    Some(message) => RuntimeError::Failed(message),
                    None => RuntimeError::NotFound,
                })
            }
            None => {
                self.pending = Some((function.clone(), input.to_string()));
                Err(RuntimeError::Pending)
            }
        }
    }
}
