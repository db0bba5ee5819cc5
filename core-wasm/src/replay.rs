//! The driver of the step-function reconciles (the PackageRevision and
//! Repository controllers'), and the types they share with their host
//! ([`Answer`], [`RepoKey`]): a reconcile is written as straight-line
//! code over calls. Where the host can be called back (the native core),
//! each call is made as it comes ([`Io::direct`]); where it cannot (the
//! component, which has no imports), each step replays the reconcile over
//! the answers the host has given so far and stops at the first call
//! without one, which becomes the host's next call ([`Io::new`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A Repository by namespace and name (`RepositoryKey`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoKey {
    /// Namespace of the Repository object.
    pub namespace: String,
    /// Name of the Repository object.
    pub name: String,
}

/// The host's answer to a call of a step-function reconcile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "camelCase")]
pub enum Answer {
    /// The call succeeded; its value (null for writes).
    Ok {
        /// The value.
        #[serde(default)]
        value: Value,
    },
    /// The object or revision does not exist.
    NotFound {
        /// The error text.
        message: String,
    },
    /// The object or revision already exists.
    AlreadyExists {
        /// The error text.
        message: String,
    },
    /// Any other failure.
    Error {
        /// The error text.
        message: String,
    },
}

impl Answer {
    /// A successful answer.
    pub fn ok(value: Value) -> Self {
        Answer::Ok { value }
    }

    /// A plain error.
    pub fn error(message: impl Into<String>) -> Self {
        Answer::Error {
            message: message.into(),
        }
    }

    /// The value, or the error text.
    pub fn into_result(self) -> Result<Value, String> {
        match self {
            Answer::Ok { value } => Ok(value),
            Answer::NotFound { message }
            | Answer::AlreadyExists { message }
            | Answer::Error { message } => Err(message),
        }
    }

    /// The value decoded as `T`, or the error text (a value that does not
    /// decode is an error naming `what`).
    pub fn decode<T: serde::de::DeserializeOwned>(self, what: &str) -> Result<T, String> {
        let v = self.into_result()?;
        serde_json::from_value(v).map_err(|e| format!("{what}: {e}"))
    }

    /// Whether this is [`Answer::NotFound`], or an error whose text says
    /// so (`repository.IsNotFoundError`: `not found`, `does not exist`,
    /// `no such`, `404`, any case).
    pub fn is_not_found(&self) -> bool {
        match self {
            Answer::NotFound { .. } => true,
            Answer::Error { message } => {
                let m = message.to_lowercase();
                ["not found", "does not exist", "no such", "404"]
                    .iter()
                    .any(|s| m.contains(s))
            }
            _ => false,
        }
    }
}

/// The reconcile needs an answer the host has not given yet (or, made
/// directly, the host refused to make the call).
#[derive(Debug)]
pub(crate) struct Suspend;

/// Work a replayed reconcile computed from the answers it was given,
/// kept between its steps ([`Io::memo`]): a step that replays past the
/// same answers takes it instead of computing it again. Kept for one
/// reconcile of one object; a new reconcile starts with a new one.
#[derive(Default)]
pub struct Kept {
    entries: std::collections::HashMap<(usize, &'static str), KeptEntry>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// One kept result: where the replay stood after computing it, the value
/// and the lines it logged.
struct KeptEntry {
    end: usize,
    value: Box<dyn std::any::Any>,
    log: Vec<String>,
}

/// Where the answers come from.
enum Source<'a, C> {
    /// The answers given so far, replayed in order.
    Replay { answers: &'a [Answer], next: usize },
    /// The host, called back for each call; `None` stops the reconcile.
    Direct(&'a mut dyn FnMut(&C) -> Option<Answer>),
}

/// The conversation of a reconcile whose calls are `C`.
pub(crate) struct Io<'a, C> {
    source: Source<'a, C>,
    kept: Option<&'a mut Kept>,
    pub(crate) pending: Option<C>,
    pub(crate) log: Vec<String>,
}

impl<C: std::fmt::Debug> std::fmt::Debug for Io<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("pending", &self.pending)
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl<'a, C> Io<'a, C> {
    /// A replay over `answers`.
    pub(crate) fn new(answers: &'a [Answer]) -> Self {
        Io {
            source: Source::Replay { answers, next: 0 },
            kept: None,
            pending: None,
            log: Vec::new(),
        }
    }

    /// A replay over `answers` that takes what earlier steps of the same
    /// reconcile computed from `kept`, and keeps what it computes there.
    pub(crate) fn keeping(answers: &'a [Answer], kept: &'a mut Kept) -> Self {
        Io {
            kept: Some(kept),
            ..Io::new(answers)
        }
    }

    /// A reconcile whose calls `host` makes as they come.
    pub(crate) fn direct(host: &'a mut dyn FnMut(&C) -> Option<Answer>) -> Self {
        Io {
            source: Source::Direct(host),
            kept: None,
            pending: None,
            log: Vec::new(),
        }
    }

    /// The answer to `call`, or [`Suspend`] when the host has yet to make
    /// it (or refused to).
    pub(crate) fn call(&mut self, call: C) -> Result<Answer, Suspend> {
        match &mut self.source {
            Source::Replay { answers, next } => match answers.get(*next) {
                Some(a) => {
                    *next += 1;
                    Ok(a.clone())
                }
                None => {
                    self.pending = Some(call);
                    Err(Suspend)
                }
            },
            Source::Direct(host) => host(&call).ok_or(Suspend),
        }
    }

    /// `compute`'s result, which is a function of the reconcile's input
    /// and the answers it reads: in a replay that keeps its work, taken
    /// from an earlier step that computed it at the same point (its calls
    /// skipped, its log lines logged again), else computed (and kept).
    pub(crate) fn memo<T: Clone + 'static>(
        &mut self,
        tag: &'static str,
        compute: impl FnOnce(&mut Self) -> Result<T, Suspend>,
    ) -> Result<T, Suspend> {
        let start = match (&self.source, &self.kept) {
            (Source::Replay { next, .. }, Some(_)) => *next,
            _ => return compute(self),
        };
        let hit = self.kept.as_deref().and_then(|kept| {
            let entry = kept.entries.get(&(start, tag))?;
            let value = entry.value.downcast_ref::<T>()?.clone();
            Some((entry.end, value, entry.log.clone()))
        });
        if let Some((end, value, log)) = hit {
            if let Source::Replay { next, .. } = &mut self.source {
                *next = end;
            }
            self.log.extend(log);
            return Ok(value);
        }
        let logged = self.log.len();
        let value = compute(self)?;
        let end = match &self.source {
            Source::Replay { next, .. } => *next,
            Source::Direct(_) => return Ok(value),
        };
        let log = self.log[logged..].to_vec();
        if let Some(kept) = self.kept.as_deref_mut() {
            kept.entries.insert(
                (start, tag),
                KeptEntry {
                    end,
                    value: Box::new(value.clone()),
                    log,
                },
            );
        }
        Ok(value)
    }

    /// Records an error the controller logs and goes on from.
    pub(crate) fn log(&mut self, message: impl Into<String>) {
        self.log.push(message.into());
    }

    /// Answers given beyond those the replay used (a host bug).
    pub(crate) fn unused(&self) -> usize {
        match &self.source {
            Source::Replay { answers, next } => answers.len().saturating_sub(*next),
            Source::Direct(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A reconcile of three calls, the middle one inside a kept
    /// computation that logs and counts how often it runs.
    fn reconcile(io: &mut Io<'_, String>, runs: &mut usize) -> Result<Vec<String>, Suspend> {
        let first = io.call("first".into())?.into_result().unwrap_or_default();
        let middle = io.memo("middle", |io| {
            *runs += 1;
            let got = io.call(format!("middle after {first}"))?;
            io.log("computed the middle");
            Ok(got.into_result().unwrap_or_default())
        })?;
        let last = io.call(format!("last after {middle}"))?;
        Ok(vec![
            first.to_string(),
            middle.to_string(),
            last.into_result().unwrap_or_default().to_string(),
        ])
    }

    /// Steps the reconcile to its end, answering call `i` with `i`;
    /// returns the calls made, the result, the log and the middle's runs.
    fn drive(keep: bool) -> (Vec<String>, Vec<String>, Vec<String>, usize) {
        let mut answers = Vec::new();
        let mut calls = Vec::new();
        let mut kept = Kept::default();
        let mut runs = 0;
        loop {
            let mut io = if keep {
                Io::keeping(&answers, &mut kept)
            } else {
                Io::new(&answers)
            };
            match reconcile(&mut io, &mut runs) {
                Ok(out) => return (calls, out, io.log, runs),
                Err(Suspend) => {
                    let call = io.pending.take().expect("a call");
                    calls.push(call);
                    answers.push(Answer::ok(json!(answers.len())));
                }
            }
        }
    }

    #[test]
    fn a_kept_computation_runs_once_and_the_replay_goes_on_as_without_it() {
        let (calls, out, log, runs) = drive(false);
        assert_eq!(calls, ["first", "middle after 0", "last after 1"]);
        assert_eq!(out, ["0", "1", "2"]);
        assert_eq!(log, ["computed the middle"]);
        // Replayed without keeping: the middle runs in the steps after
        // its call was answered, and in the step that asks for it.
        assert_eq!(runs, 3);
        let (kept_calls, kept_out, kept_log, kept_runs) = drive(true);
        assert_eq!((kept_calls, kept_out, kept_log), (calls, out, log));
        assert_eq!(kept_runs, 2, "computed once to its call, once to its end");
    }

    #[test]
    fn made_directly_a_kept_computation_runs_once() {
        let mut runs = 0;
        let mut made = Vec::new();
        let mut host = |call: &String| {
            made.push(call.clone());
            Some(Answer::ok(json!(made.len() - 1)))
        };
        let mut io = Io::direct(&mut host);
        let out = reconcile(&mut io, &mut runs).expect("done");
        assert_eq!(out, ["0", "1", "2"]);
        assert_eq!(runs, 1);
        assert_eq!(io.log, ["computed the middle"]);
    }
}
