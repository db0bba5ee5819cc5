//! One reconcile of a v1alpha2 PackageRevision (`PRC/packagerevision_controller.go`),
//! as a pure step function: [`step`] is given the object's key and the
//! answers to the calls made so far, and returns the next [`Call`] the host
//! must make, or the reconcile's [`Outcome`].
//!
//! The phases, each ending the reconcile when it has work or fails:
//! finalizer and Repository ownerReference ([`ownership`]) → source
//! ([`source_phase`]) → render ([`render_phase`]) → lifecycle
//! ([`lifecycle`]).
//!
//! Where upstream has a bug (§13 of the reference), this does not copy it;
//! `docs/package-revisions.md` lists each deviation:
//! * infrastructure errors of the source and render phases are returned,
//!   so the host backs off and retries (upstream drops them);
//! * a failed stale-check read clears the render state it set;
//! * status applies without content re-send the publish data;
//! * a source whose revision is already in Git is not run twice.

pub mod io;
mod lifecycle;
mod ownership;
mod render_phase;
mod source_phase;
pub mod status;

use serde::{Deserialize, Serialize};

use crate::api::package_revision::v1alpha2::PackageRevision;
use crate::api::Lifecycle;

pub use crate::replay::Kept;
pub use io::{Answer, Call, Content, Fetched, Files, Rendered, RepoKey, RevisionKey};
use io::{Io, Suspend};

/// What the controller was configured with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    /// Whether drafts are rendered (a renderer is configured).
    #[serde(default = "yes")]
    pub render: bool,
    /// How long to wait when every render slot is taken, in milliseconds
    /// (`--packagerevisions.render-requeue-delay`, 2 s).
    #[serde(default = "render_requeue_delay")]
    pub render_requeue_delay_ms: u64,
}

fn yes() -> bool {
    true
}

fn render_requeue_delay() -> u64 {
    2000
}

impl Default for Config {
    fn default() -> Self {
        Config {
            render: true,
            render_requeue_delay_ms: render_requeue_delay(),
        }
    }
}

/// One step's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepInput {
    /// Namespace of the PackageRevision.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// RFC 3339 time stamped on the conditions written.
    pub now: String,
    /// Configuration.
    #[serde(default)]
    pub config: Config,
    /// The answers to the calls made so far, in order.
    #[serde(default)]
    pub answers: Vec<Answer>,
}

/// How a reconcile ended (`ctrl.Result` and the error).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Reconcile again soon.
    #[serde(default)]
    pub requeue: bool,
    /// Reconcile again after this many milliseconds (0: not).
    #[serde(default)]
    pub requeue_after_ms: u64,
    /// The error returned (the host backs off and retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Errors the controller logged and went on from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
}

impl Outcome {
    fn done() -> Self {
        Outcome::default()
    }

    fn requeue() -> Self {
        Outcome {
            requeue: true,
            ..Outcome::default()
        }
    }

    fn error(message: impl Into<String>) -> Self {
        Outcome {
            error: Some(message.into()),
            ..Outcome::default()
        }
    }
}

/// The next thing the host does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Make this call and step again with its answer appended.
    Call {
        /// The call.
        call: Call,
    },
    /// The reconcile is over.
    Done {
        /// How it ended.
        outcome: Outcome,
    },
}

/// What a phase tells the pipeline.
#[derive(Clone)]
enum Phase {
    /// Go on to the next phase.
    Continue,
    /// The reconcile ends here.
    End(Outcome),
}

type PhaseResult = Result<Phase, Suspend>;

/// Per-reconcile context: the object as read, the time, the config.
struct Ctx<'a> {
    pr: PackageRevision,
    now: &'a str,
    config: &'a Config,
}

impl Ctx<'_> {
    fn revision(&self) -> RevisionKey {
        RevisionKey {
            repository: RepoKey {
                namespace: self.pr.metadata.namespace.clone(),
                name: self.pr.spec.repository.clone(),
            },
            package: self.pr.spec.package_name.clone(),
            workspace: self.pr.spec.workspace_name.clone(),
        }
    }
}

/// The next step of the reconcile of `input.namespace/input.name`.
pub fn step(input: &StepInput) -> Step {
    let mut io = Io::new(&input.answers);
    let r = reconcile(&mut io, input);
    finish(io, r)
}

fn finish(mut io: Io<'_>, r: Result<Outcome, Suspend>) -> Step {
    match r {
        Ok(mut outcome) => {
            if io.unused() > 0 {
                io.log(format!(
                    "{} answers were given beyond the calls made",
                    io.unused()
                ));
            }
            outcome.log.append(&mut io.log);
            Step::Done { outcome }
        }
        Err(Suspend) => match io.pending.take() {
            Some(call) => Step::Call { call },
            None => Step::Done {
                outcome: Outcome::error("the reconcile stopped without a call"),
            },
        },
    }
}

/// [`step`], keeping in `kept` what it computes for the next step of the
/// same reconcile (and taking what an earlier step kept): for a host that
/// steps one reconcile at a time with a new answer each time.
pub fn step_keeping(input: &StepInput, kept: &mut Kept) -> Step {
    let mut io = Io::keeping(&input.answers, kept);
    let r = reconcile(&mut io, input);
    finish(io, r)
}

/// The whole reconcile of `input.namespace/input.name` with its calls made
/// by `host` as they come (no replay: for a core that can call the host
/// back); `input.answers` is not read. `None` when `host` refused a call
/// (answered `None`), which ends the reconcile where it stood.
pub fn run(input: &StepInput, host: &mut dyn FnMut(&Call) -> Option<Answer>) -> Option<Outcome> {
    let mut io = Io::direct(host);
    let mut outcome = reconcile(&mut io, input).ok()?;
    outcome.log.append(&mut io.log);
    Some(outcome)
}

fn reconcile(io: &mut Io<'_>, input: &StepInput) -> Result<Outcome, Suspend> {
    // Replayed, each part below is kept once done (see `Io::memo`), so a
    // step replays only the part it stopped in.
    let pr = io.memo("object", |io| {
        let got = io.call(Call::GetPackageRevision {
            namespace: input.namespace.clone(),
            name: input.name.clone(),
        })?;
        if matches!(got, Answer::NotFound { .. }) {
            return Ok(None);
        }
        Ok(Some(got.decode::<PackageRevision>("PackageRevision")))
    })?;
    let pr = match pr {
        None => return Ok(Outcome::done()),
        Some(Ok(pr)) => pr,
        Some(Err(e)) => return Ok(Outcome::error(e)),
    };
    let mut ctx = Ctx {
        pr,
        now: &input.now,
        config: &input.config,
    };
    if ctx.pr.metadata.deletion_timestamp.is_some() {
        return ownership::deletion(io, &ctx);
    }
    let (owned, phase) = io.memo("ownership", |io| {
        let mut ctx = Ctx {
            pr: ctx.pr.clone(),
            ..ctx
        };
        let phase = ownership::ensure(io, &mut ctx)?;
        Ok((ctx.pr, phase))
    })?;
    ctx.pr = owned;
    if let Phase::End(o) = phase {
        return Ok(o);
    }
    if ctx.pr.spec.lifecycle == Lifecycle::Unset {
        return Ok(Outcome::done());
    }
    if let Phase::End(o) = io.memo("source phase", |io| source_phase::run(io, &ctx))? {
        return Ok(o);
    }
    if let Phase::End(o) = io.memo("render phase", |io| render_phase::run(io, &ctx))? {
        return Ok(o);
    }
    lifecycle::run(io, &ctx)
}

/// `updateLatestRevisionLabels`: list the package's revisions and patch the
/// labels that differ; errors are logged.
fn update_latest_labels(io: &mut Io<'_>, pr: &PackageRevision) -> Result<(), Suspend> {
    let listed = io.call(Call::ListPackageRevisions {
        namespace: pr.metadata.namespace.clone(),
        repository: pr.spec.repository.clone(),
        package_name: pr.spec.package_name.clone(),
    })?;
    let items: Vec<PackageRevision> = match listed.decode("PackageRevision list") {
        Ok(items) => items,
        Err(e) => {
            io.log(format!("list revisions for latest-revision labels: {e}"));
            return Ok(());
        }
    };
    let latest = crate::prc::labels::latest_revision(&items);
    for (name, value) in latest.patches {
        let answer = io.call(Call::MergePatch {
            namespace: pr.metadata.namespace.clone(),
            name: name.clone(),
            patch: serde_json::json!({"metadata": {"labels": {crate::prc::LATEST_REVISION_LABEL: value}}}),
        })?;
        if let Err(e) = answer.into_result() {
            io.log(format!("label {name} latest-revision={value}: {e}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
