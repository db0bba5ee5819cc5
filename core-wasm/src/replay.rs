//! The replay driver of the step-function reconciles
//! ([`crate::prc::reconcile`], [`crate::repo::reconcile`]): a reconcile is
//! written as straight-line code over calls; each step replays it over the
//! answers the host has given so far and stops at the first call without
//! one, which becomes the host's next call.

use crate::prc::reconcile::io::Answer;

/// The reconcile needs an answer the host has not given yet.
#[derive(Debug)]
pub(crate) struct Suspend;

/// The replay of a reconcile whose calls are `C` over the answers given so
/// far.
#[derive(Debug)]
pub(crate) struct Io<'a, C> {
    answers: &'a [Answer],
    next: usize,
    pub(crate) pending: Option<C>,
    pub(crate) log: Vec<String>,
}

impl<'a, C> Io<'a, C> {
    pub(crate) fn new(answers: &'a [Answer]) -> Self {
        Io {
            answers,
            next: 0,
            pending: None,
            log: Vec::new(),
        }
    }

    /// The answer to `call`, or [`Suspend`] when the host has yet to make
    /// it.
    pub(crate) fn call(&mut self, call: C) -> Result<Answer, Suspend> {
        match self.answers.get(self.next) {
            Some(a) => {
                self.next += 1;
                Ok(a.clone())
            }
            None => {
                self.pending = Some(call);
                Err(Suspend)
            }
        }
    }

    /// Records an error the controller logs and goes on from.
    pub(crate) fn log(&mut self, message: impl Into<String>) {
        self.log.push(message.into());
    }

    /// Answers given beyond those the replay used (a host bug).
    pub(crate) fn unused(&self) -> usize {
        self.answers.len().saturating_sub(self.next)
    }
}
