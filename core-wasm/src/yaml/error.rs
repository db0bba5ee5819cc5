//! Errors of the YAML layer.

use super::token::Mark;

/// Which stage of the YAML pipeline failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is not acceptable text (control characters, bad encoding).
    Reader,
    /// The scanner found malformed YAML.
    Scanner,
    /// The parser found a structural error.
    Parser,
    /// Building the node tree failed (unknown anchor, depth limit, …).
    Composer,
    /// The emitter was given an invalid event sequence.
    Emitter,
    /// An edit or a conversion was asked for something the tree cannot hold.
    Edit,
}

/// An error of the YAML layer, with yaml.v3's wording and the 1-based line
/// where it was found (0 when no position applies).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.render())]
pub struct YamlError {
    /// Which stage failed.
    pub kind: ErrorKind,
    /// What went wrong, in yaml.v3's words.
    pub problem: String,
    /// Optional context (`while parsing a block mapping`).
    pub context: String,
    /// Where the problem is.
    pub problem_mark: Mark,
    /// Where the context starts.
    pub context_mark: Mark,
}

impl YamlError {
    /// A new error without context.
    pub(crate) fn new(kind: ErrorKind, problem: impl Into<String>, mark: Mark) -> Self {
        YamlError {
            kind,
            problem: problem.into(),
            context: String::new(),
            problem_mark: mark,
            context_mark: Mark::default(),
        }
    }

    /// A new error with a context and its mark.
    pub(crate) fn with_context(
        kind: ErrorKind,
        context: impl Into<String>,
        context_mark: Mark,
        problem: impl Into<String>,
        problem_mark: Mark,
    ) -> Self {
        YamlError {
            kind,
            problem: problem.into(),
            context: context.into(),
            problem_mark,
            context_mark,
        }
    }

    /// The 1-based line of the problem.
    pub fn line(&self) -> usize {
        wide(self.problem_mark.line).saturating_add(1)
    }

    /// An error of an edit or conversion.
    pub(crate) fn edit(problem: impl Into<String>) -> Self {
        YamlError::new(ErrorKind::Edit, problem, Mark::default())
    }

    /// yaml.v3's message, with its line rule (`parser.fail` in `decode.go`):
    /// the context line if any, else the problem line; scanner lines are
    /// 1-based, parser lines are reported as yaml.v3 reports them.
    fn render(&self) -> String {
        match self.kind {
            ErrorKind::Edit | ErrorKind::Emitter => format!("yaml: {}", self.problem),
            ErrorKind::Composer => {
                if self.problem_mark == Mark::default() {
                    format!("yaml: {}", self.problem)
                } else {
                    format!(
                        "yaml: line {}: {}",
                        self.problem_mark.line + 1,
                        self.problem
                    )
                }
            }
            ErrorKind::Reader | ErrorKind::Scanner | ErrorKind::Parser => {
                let bump = usize::from(self.kind == ErrorKind::Scanner);
                let line = if self.context_mark.line != 0 {
                    wide(self.context_mark.line) + bump
                } else if self.problem_mark.line != 0 {
                    wide(self.problem_mark.line) + bump
                } else {
                    0
                };
                let problem = if self.problem.is_empty() {
                    "unknown problem parsing YAML content"
                } else {
                    &self.problem
                };
                if line != 0 {
                    format!("yaml: line {line}: {problem}")
                } else {
                    format!("yaml: {problem}")
                }
            }
        }
    }
}

/// Result alias of the YAML layer.
pub type Result<T> = std::result::Result<T, YamlError>;

/// The result type inside the scanner and parser: the error is boxed so that
/// the results passed along the hot paths stay small.
pub(crate) type Fallible<T> = std::result::Result<T, Box<YamlError>>;

impl From<Box<YamlError>> for YamlError {
    fn from(err: Box<YamlError>) -> Self {
        *err
    }
}

/// A mark field as a `usize` line number.
#[inline]
fn wide(n: u32) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX - 1)
}
