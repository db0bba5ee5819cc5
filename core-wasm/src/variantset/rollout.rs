//! Staged rollouts (`spec.rolloutStrategy`): which of the planned updates
//! of a set's children may be written now, and where the rollout stands.
//!
//! Each desired child falls in the first step whose selector matches its
//! labels (its repository's or target object's labels, and the labels its
//! template gives the downstream); children no step selects form a last,
//! implicit step named [`REMAINING`]. An existing child is
//!
//! * **pending** while its spec differs from the desired one;
//! * **failed** when, with the desired spec, its `Stalled` condition is
//!   `True`, its `Ready` condition `False`, or a downstream render failed;
//! * **done** when, with the desired spec, its downstream package has a
//!   published revision made from the set's upstream revision, no draft or
//!   proposal of it is open, and (with `requireReady`) that revision's
//!   readiness gates are all `True`;
//! * **updating** otherwise (and a child created by this plan).
//!
//! The current step is the first one not done. The updates of its pending
//! children are written, at most `maxUpdate` changing at once; every other
//! update is held. Nothing is updated while the rollout is paused or a
//! child of the current or an earlier step failed. New children are
//! created and children no target wants are deleted at once: there is no
//! earlier state to hold them at.
//!
//! Progress is read from the objects on every reconcile, never remembered,
//! so a controller killed anywhere carries on from where the objects are.

use std::collections::{BTreeMap, HashMap};

use super::sync::{existing_key, is_foreign, SyncPlan};
use super::types::{
    PackageVariantSet, Repository, RolloutStatus, RolloutStepStatus, RolloutStrategy,
};
use crate::api::package_revision::Lifecycle;
use crate::api::upstream_lock::is_up_to_date;
use crate::api::{Condition, PackageRevision, PackageVariant};
use crate::krm::cel::{Budget, CelEnv, ConditionInput, Limits, Program};

/// Condition type of a staged rollout.
pub const ROLLOUT: &str = "Rollout";
/// Reason: every step is done.
pub const REASON_COMPLETE: &str = "Complete";
/// Reason: a step is being rolled out.
pub const REASON_PROGRESSING: &str = "Progressing";
/// Reason: `paused: true`.
pub const REASON_PAUSED: &str = "Paused";
/// Reason: a variant failed; nothing more is changed.
pub const REASON_FAILED: &str = "Failed";
/// Name of the implicit last step (children no step selects).
pub const REMAINING: &str = "(remaining)";

/// Where one child stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Updating,
    Done,
    Failed,
}

/// A desired child with what the rollout knows of it.
struct Child<'a> {
    name: &'a str,
    step: usize,
    state: State,
}

/// The outcome of [`gate`]: the rollout's status and condition, and the
/// names of the children whose update was held.
#[derive(Debug, Clone, PartialEq)]
pub struct Gated {
    /// `status.rollout`.
    pub status: RolloutStatus,
    /// The `Rollout` condition.
    pub condition: Condition,
    /// Children whose update waits for a later reconcile.
    pub held: Vec<String>,
    /// The children of each step (of `status.steps`), in target order.
    pub members: Vec<Vec<String>>,
}

/// What a render says of a rollout: the status to write, and for those who
/// show it (the playground) each step's children and the held updates.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutView {
    /// `status.rollout`.
    #[serde(flatten)]
    pub status: RolloutStatus,
    /// The children of each step, in target order.
    pub members: Vec<Vec<String>>,
    /// Children whose update waits.
    pub held: Vec<String>,
}

/// The labels a step selector sees for a child: its repository's labels
/// (the downstream repository), the target object's, then the labels its
/// template gives (later ones win).
pub fn child_labels(
    spec_labels: &BTreeMap<String, String>,
    downstream_repo: &str,
    object_labels: Option<&BTreeMap<String, String>>,
    repositories: &[Repository],
    namespace: &str,
) -> BTreeMap<String, String> {
    let mut labels = repositories
        .iter()
        .find(|r| {
            r.metadata.name == downstream_repo
                && super::scope::in_namespace(&r.metadata.namespace, namespace)
        })
        .map(|r| r.metadata.labels.clone())
        .unwrap_or_default();
    if let Some(o) = object_labels {
        labels.extend(o.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    labels.extend(spec_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    labels
}

/// How many children may be changing at once in a step of `size`.
/// Validation has checked the value; anything else counts as "all".
pub fn max_update(value: Option<&serde_json::Value>, size: usize) -> usize {
    match value {
        Some(serde_json::Value::Number(n)) => n.as_u64().map_or(size, |n| n as usize),
        Some(serde_json::Value::String(s)) => match s.strip_suffix('%').map(str::parse::<u64>) {
            Some(Ok(pct)) => ((size as u64 * pct).div_ceil(100)).max(1) as usize,
            _ => size,
        },
        _ => size,
    }
}

/// The step of a child with `labels`: the first whose selector matches.
fn step_of(strategy: &RolloutStrategy, labels: &BTreeMap<String, String>) -> usize {
    strategy
        .steps
        .iter()
        .position(|s| {
            s.selector
                .as_ref()
                .is_none_or(|sel| sel.matches(labels).unwrap_or(false))
        })
        .unwrap_or(strategy.steps.len())
}

/// Whether `pv` says it is failing.
fn is_failing(pv: &PackageVariant) -> bool {
    let cond = |t: &str, s: &str| {
        pv.status
            .conditions
            .iter()
            .any(|c| c.type_ == t && c.status == s)
    };
    cond("Stalled", "True")
        || cond("Ready", "False")
        || pv.status.downstream_targets.iter().any(|t| {
            t.render_status
                .as_ref()
                .is_some_and(|r| !r.error.is_empty())
        })
}

/// A rollout's `readyWhen`, compiled once per reconcile.
struct ReadyWhen {
    env: CelEnv,
    program: Option<Program>,
}

impl ReadyWhen {
    fn of(strategy: &RolloutStrategy) -> Option<Self> {
        let source = strategy.ready_when.as_deref()?;
        let env = CelEnv::readiness(Limits::default());
        // A source that does not compile is a validation error, reported
        // before any rollout; here it leaves every variant undone.
        let program = env.compile(source).ok();
        Some(ReadyWhen { env, program })
    }

    /// Whether `pr` is ready by the expression; an error when it cannot
    /// be evaluated.
    fn holds(&self, pr: &PackageRevision) -> Result<bool, String> {
        let Some(program) = &self.program else {
            return Ok(false);
        };
        let object = serde_json::to_value(pr).map_err(|e| e.to_string())?;
        let input = ConditionInput::revision(&object);
        let mut budget = Budget::new(self.env.limits().max_render_cost);
        self.env
            .eval_condition(program, &input, &mut budget)
            .map_err(|e| e.to_string())
    }
}

/// The state of an existing child whose spec is the desired one.
fn applied_state(
    pv: &PackageVariant,
    downstream: &[&PackageRevision],
    upstream: &PackageRevision,
    require_ready: bool,
    ready_when: Option<&ReadyWhen>,
) -> State {
    if is_failing(pv) {
        return State::Failed;
    }
    let open = downstream.iter().any(|pr| {
        matches!(pr.spec.lifecycle, Lifecycle::Draft | Lifecycle::Proposed)
            && pr.metadata.is_owned_by(&pv.metadata.uid)
    });
    let latest = downstream
        .iter()
        .filter(|pr| pr.spec.lifecycle == Lifecycle::Published)
        .max_by_key(|pr| pr.spec.revision);
    match latest {
        Some(pr) if !open && is_up_to_date(pr, upstream) && (!require_ready || pr.gates_met()) => {
            match ready_when.map_or(Ok(true), |r| r.holds(pr)) {
                Ok(true) => State::Done,
                Ok(false) => State::Updating,
                Err(_) => State::Failed,
            }
        }
        _ => State::Updating,
    }
}

/// Holds the updates of `plan` the rollout does not allow yet, and says
/// where it stands. `desired` are the desired children with their keys,
/// `labels` each one's labels (see [`child_labels`]), `existing` the set's
/// children as listed, `downstream` the PackageRevisions of their
/// downstream packages, `upstream` the set's upstream revision.
#[allow(clippy::too_many_arguments)]
pub fn gate(
    pvs: &PackageVariantSet,
    strategy: &RolloutStrategy,
    desired: &[(String, PackageVariant)],
    labels: &[BTreeMap<String, String>],
    existing: &[PackageVariant],
    downstream: &[PackageRevision],
    upstream: &PackageRevision,
    plan: &mut SyncPlan,
) -> Gated {
    let mut current: HashMap<String, &PackageVariant> = HashMap::new();
    for pv in existing {
        if !is_foreign(pvs, pv) {
            current.insert(existing_key(&pvs.metadata.name, pv), pv);
        }
    }
    let mut by_package: HashMap<(&str, &str), Vec<&PackageRevision>> = HashMap::new();
    for pr in downstream {
        by_package
            .entry((pr.spec.repository.as_str(), pr.spec.package_name.as_str()))
            .or_default()
            .push(pr);
    }
    let ready_when = ReadyWhen::of(strategy);
    let mut children: Vec<Child<'_>> = Vec::with_capacity(desired.len());
    for (i, (key, want)) in desired.iter().enumerate() {
        let step = labels
            .get(i)
            .map_or(strategy.steps.len(), |l| step_of(strategy, l));
        let (name, state) = match current.get(key) {
            None => (want.metadata.name.as_str(), State::Updating),
            Some(have) if have.spec != want.spec => (have.metadata.name.as_str(), State::Pending),
            Some(have) => {
                let (repo, package) = have
                    .spec
                    .downstream
                    .as_ref()
                    .map_or(("", ""), |d| (d.repo.as_str(), d.package.as_str()));
                let prs = by_package
                    .get(&(repo, package))
                    .map_or(&[][..], Vec::as_slice);
                let state = applied_state(
                    have,
                    prs,
                    upstream,
                    strategy.require_ready,
                    ready_when.as_ref(),
                );
                (have.metadata.name.as_str(), state)
            }
        };
        children.push(Child { name, step, state });
    }

    let implicit = children.iter().any(|c| c.step == strategy.steps.len());
    let step_count = strategy.steps.len() + usize::from(implicit);
    let step_name = |s: usize| -> String {
        strategy
            .steps
            .get(s)
            .map_or(REMAINING.to_string(), |st| st.name.clone())
    };
    let active = (0..step_count).find(|&s| {
        children
            .iter()
            .any(|c| c.step == s && c.state != State::Done)
    });
    let failed: Vec<String> = children
        .iter()
        .filter(|c| c.state == State::Failed && active.is_some_and(|a| c.step <= a))
        .map(|c| c.name.to_string())
        .collect();

    // The pending children allowed to change now.
    let mut allowed: Vec<&str> = Vec::new();
    if let (Some(a), false, true) = (active, strategy.paused, failed.is_empty()) {
        let in_step = children.iter().filter(|c| c.step == a);
        let size = in_step.clone().count();
        let updating = in_step
            .clone()
            .filter(|c| c.state == State::Updating)
            .count();
        let budget = max_update(
            strategy.steps.get(a).and_then(|s| s.max_update.as_ref()),
            size,
        )
        .saturating_sub(updating);
        allowed = in_step
            .filter(|c| c.state == State::Pending)
            .take(budget)
            .map(|c| c.name)
            .collect();
    }
    let mut held = Vec::new();
    plan.update.retain(|pv| {
        let keep = allowed.contains(&pv.metadata.name.as_str());
        if !keep {
            held.push(pv.metadata.name.clone());
        }
        keep
    });
    for c in children.iter_mut() {
        if c.state == State::Pending && allowed.contains(&c.name) {
            c.state = State::Updating;
        }
    }

    let steps: Vec<RolloutStepStatus> = (0..step_count)
        .map(|s| {
            let count = |st: State| {
                children
                    .iter()
                    .filter(|c| c.step == s && c.state == st)
                    .count() as i64
            };
            RolloutStepStatus {
                name: step_name(s),
                variants: children.iter().filter(|c| c.step == s).count() as i64,
                pending: count(State::Pending),
                updating: count(State::Updating),
                done: count(State::Done),
                failed: count(State::Failed),
            }
        })
        .collect();
    let (status, reason, message) = match active {
        None => (
            "True",
            REASON_COMPLETE,
            format!(
                "all {} variants are up to date in {} step(s)",
                children.len(),
                step_count
            ),
        ),
        Some(a) => {
            let st = &steps[a];
            let at = format!(
                "step {} ({}/{}): {} pending, {} updating, {} done",
                st.name,
                a + 1,
                step_count,
                st.pending,
                st.updating,
                st.done
            );
            if !failed.is_empty() {
                (
                    "False",
                    REASON_FAILED,
                    format!("stopped at {at}: failed: {}", failed.join(", ")),
                )
            } else if strategy.paused {
                ("False", REASON_PAUSED, format!("paused at {at}"))
            } else {
                ("False", REASON_PROGRESSING, at)
            }
        }
    };
    let members = (0..step_count)
        .map(|s| {
            children
                .iter()
                .filter(|c| c.step == s)
                .map(|c| c.name.to_string())
                .collect()
        })
        .collect();
    Gated {
        members,
        status: RolloutStatus {
            current_step: active.map(step_name).unwrap_or_default(),
            steps,
            failed,
        },
        condition: Condition {
            type_: ROLLOUT.to_string(),
            status: status.to_string(),
            observed_generation: None,
            last_transition_time: String::new(),
            reason: reason.to_string(),
            message,
        },
        held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::package_revision::{GitLock, Locator, PackageCondition, ReadinessGate};
    use crate::api::{Downstream, PackageVariantSpec, Upstream};
    use crate::variantset::selector::LabelSelector;
    use crate::variantset::sync::{desired_children, plan};
    use crate::variantset::types::RolloutStep;

    fn strategy(steps: &[(&str, Option<&str>, Option<serde_json::Value>)]) -> RolloutStrategy {
        RolloutStrategy {
            steps: steps
                .iter()
                .map(|(name, stage, max)| RolloutStep {
                    name: name.to_string(),
                    selector: stage.map(|v| LabelSelector {
                        match_labels: [("stage".to_string(), v.to_string())].into(),
                        ..LabelSelector::default()
                    }),
                    max_update: max.clone(),
                })
                .collect(),
            ..RolloutStrategy::default()
        }
    }

    fn set() -> PackageVariantSet {
        let mut p = PackageVariantSet::default();
        p.metadata.name = "s".into();
        p.metadata.namespace = "ns".into();
        p.metadata.uid = "set-uid".into();
        p
    }

    fn spec(repo: &str, revision: i64) -> PackageVariantSpec {
        PackageVariantSpec {
            upstream: Some(Upstream {
                repo: "blueprints".into(),
                package: "web".into(),
                revision,
                workspace_name: String::new(),
            }),
            downstream: Some(Downstream {
                repo: repo.into(),
                package: "web".into(),
            }),
            ..PackageVariantSpec::default()
        }
    }

    fn upstream(revision: i64) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.spec.repository = "blueprints".into();
        pr.spec.package_name = "web".into();
        pr.spec.revision = revision;
        pr
    }

    /// A revision of `repo`'s `web`, made from upstream `web/v<from>`.
    fn revision(repo: &str, lifecycle: Lifecycle, from: i64, owner: &str) -> PackageRevision {
        let mut pr = PackageRevision::default();
        pr.metadata.name = format!("{repo}.web.{from}");
        pr.spec.repository = repo.into();
        pr.spec.package_name = "web".into();
        pr.spec.lifecycle = lifecycle;
        pr.spec.revision = if lifecycle == Lifecycle::Published {
            from
        } else {
            0
        };
        pr.metadata.owner_references = vec![crate::api::OwnerReference {
            uid: owner.into(),
            ..Default::default()
        }];
        pr.status.upstream_lock = Some(Locator {
            git: Some(GitLock {
                r#ref: format!("web/v{from}"),
                ..GitLock::default()
            }),
            ..Locator::default()
        });
        pr
    }

    /// Children of `repos` (stage labels given), existing at revision
    /// `have[i]` (0: not created), desired at revision 2.
    struct Case {
        pvs: PackageVariantSet,
        desired: Vec<(String, PackageVariant)>,
        labels: Vec<BTreeMap<String, String>>,
        existing: Vec<PackageVariant>,
        downstream: Vec<PackageRevision>,
    }

    fn case(stages: &[(&str, &str, i64)], s: RolloutStrategy) -> Case {
        let mut pvs = set();
        pvs.spec.rollout_strategy = Some(s);
        let desired = desired_children(&pvs, stages.iter().map(|(r, _, _)| spec(r, 2)).collect());
        let labels = stages
            .iter()
            .map(|(_, st, _)| [("stage".to_string(), st.to_string())].into())
            .collect();
        let mut existing = Vec::new();
        let mut downstream = Vec::new();
        for ((repo, _, have), (_, pv)) in stages.iter().zip(&desired) {
            if *have == 0 {
                continue;
            }
            let mut old = pv.clone();
            old.metadata.uid = format!("uid-{repo}");
            old.spec = spec(repo, *have);
            existing.push(old);
            downstream.push(revision(
                repo,
                Lifecycle::Published,
                *have,
                &format!("uid-{repo}"),
            ));
        }
        Case {
            pvs,
            desired,
            labels,
            existing,
            downstream,
        }
    }

    impl Case {
        fn gate(&self) -> (SyncPlan, Gated) {
            let mut p = plan(&self.pvs, &self.desired, &self.existing);
            let s = self.pvs.spec.rollout_strategy.as_ref().unwrap();
            let g = gate(
                &self.pvs,
                s,
                &self.desired,
                &self.labels,
                &self.existing,
                &self.downstream,
                &upstream(2),
                &mut p,
            );
            (p, g)
        }

        /// `repo`'s child takes the desired spec, then its change is
        /// published (`publish`) or left as a draft.
        fn advance(&mut self, repo: &str, publish: bool) {
            let uid = format!("uid-{repo}");
            let want = self
                .desired
                .iter()
                .find(|(_, d)| d.spec.downstream.as_ref().unwrap().repo == repo)
                .unwrap()
                .1
                .spec
                .clone();
            let pv = self
                .existing
                .iter_mut()
                .find(|e| e.metadata.uid == uid)
                .unwrap();
            pv.spec = want;
            let lc = if publish {
                Lifecycle::Published
            } else {
                Lifecycle::Draft
            };
            self.downstream.push(revision(repo, lc, 2, &uid));
        }
    }

    fn names(pvs: &[PackageVariant]) -> Vec<&str> {
        pvs.iter().map(|p| p.metadata.name.as_str()).collect()
    }

    fn three_steps() -> RolloutStrategy {
        strategy(&[
            ("canary", Some("canary"), None),
            ("early", Some("early"), Some(serde_json::json!("50%"))),
            ("rest", None, Some(serde_json::json!(1))),
        ])
    }

    const FLEET: &[(&str, &str, i64)] = &[
        ("a", "canary", 1),
        ("b", "early", 1),
        ("c", "early", 1),
        ("d", "late", 1),
        ("e", "late", 1),
    ];

    #[test]
    fn only_the_first_step_changes_until_it_is_published() {
        let mut c = case(FLEET, three_steps());
        let (p, g) = c.gate();
        assert_eq!(names(&p.update), ["s-a-web"]);
        assert_eq!(g.held, ["s-b-web", "s-c-web", "s-d-web", "s-e-web"]);
        assert_eq!(g.status.current_step, "canary");
        assert_eq!(g.condition.reason, REASON_PROGRESSING);
        assert_eq!(
            g.condition.message,
            "step canary (1/3): 0 pending, 1 updating, 0 done"
        );

        // Applied but only drafted: still updating, nothing more moves.
        c.advance("a", false);
        let (p, g) = c.gate();
        assert!(p.update.is_empty());
        assert_eq!(g.status.steps[0].updating, 1);

        // Published from v2: step 2 starts, half of it (rounded up) at once.
        c.downstream
            .retain(|pr| pr.spec.lifecycle == Lifecycle::Published);
        c.advance("a", true);
        let (p, g) = c.gate();
        assert_eq!(names(&p.update), ["s-b-web"]);
        assert_eq!(g.status.current_step, "early");
        assert_eq!(g.status.steps[0].done, 1);

        c.advance("b", true);
        c.advance("c", false);
        let (p, _) = c.gate();
        assert!(p.update.is_empty(), "c is still changing");
        c.downstream
            .retain(|pr| pr.spec.lifecycle == Lifecycle::Published);
        c.advance("c", true);
        let (p, g) = c.gate();
        assert_eq!(names(&p.update), ["s-d-web"], "maxUpdate 1");
        assert_eq!(g.status.current_step, "rest");
        c.advance("d", true);
        c.advance("e", true);
        let (p, g) = c.gate();
        assert!(p.is_noop());
        assert_eq!(g.condition.status, "True");
        assert_eq!(g.condition.reason, REASON_COMPLETE);
        assert_eq!(g.status.current_step, "");
        assert!(g.status.steps.iter().all(|s| s.done == s.variants));
    }

    #[test]
    fn a_failing_variant_stops_the_rollout_and_pause_holds_it() {
        let mut c = case(FLEET, three_steps());
        c.advance("a", true);
        c.existing[0].status.conditions.push(Condition {
            type_: "Stalled".into(),
            status: "True".into(),
            ..Condition::default()
        });
        let (p, g) = c.gate();
        assert!(p.update.is_empty());
        assert_eq!(g.condition.reason, REASON_FAILED);
        assert_eq!(g.status.failed, ["s-a-web"]);
        assert!(
            g.condition.message.contains("failed: s-a-web"),
            "{:?}",
            g.condition
        );

        c.existing[0].status.conditions.clear();
        c.pvs.spec.rollout_strategy.as_mut().unwrap().paused = true;
        let (p, g) = c.gate();
        assert!(p.update.is_empty());
        assert_eq!(g.condition.reason, REASON_PAUSED);
        assert_eq!(g.status.current_step, "early");

        c.pvs.spec.rollout_strategy.as_mut().unwrap().paused = false;
        let (p, _) = c.gate();
        assert_eq!(names(&p.update), ["s-b-web"]);
    }

    #[test]
    fn readiness_gates_hold_a_step_when_asked() {
        let mut s = three_steps();
        s.require_ready = true;
        let mut c = case(FLEET, s);
        c.advance("a", true);
        let gated = c.downstream.last_mut().unwrap();
        gated.spec.readiness_gates = vec![ReadinessGate {
            condition_type: "Healthy".into(),
        }];
        let (p, g) = c.gate();
        assert!(p.update.is_empty());
        assert_eq!(g.status.steps[0].updating, 1);
        c.downstream.last_mut().unwrap().status.conditions = vec![PackageCondition {
            type_: "Healthy".into(),
            status: "True".into(),
            ..PackageCondition::default()
        }];
        let (p, _) = c.gate();
        assert_eq!(names(&p.update), ["s-b-web"]);
    }

    #[test]
    fn a_ready_when_expression_holds_a_step_until_it_is_true() {
        let mut s = three_steps();
        s.ready_when = Some(
            "has(revision.status.conditions) && revision.status.conditions.exists(c, c.type == 'Healthy' && c.status == 'True')"
                .into(),
        );
        let mut c = case(FLEET, s);
        c.advance("a", true);
        let (p, g) = c.gate();
        assert!(p.update.is_empty(), "a is published but not Healthy");
        assert_eq!(g.status.steps[0].updating, 1);
        c.downstream.last_mut().unwrap().status.conditions = vec![PackageCondition {
            type_: "Healthy".into(),
            status: "True".into(),
            ..PackageCondition::default()
        }];
        let (p, g) = c.gate();
        assert_eq!(names(&p.update), ["s-b-web"]);
        assert_eq!(g.status.steps[0].done, 1);

        // An expression that cannot be evaluated on the revision (a
        // string compared with a number) fails the variant, by name.
        c.pvs.spec.rollout_strategy.as_mut().unwrap().ready_when =
            Some("revision.spec.packageName > 3".into());
        let (p, g) = c.gate();
        assert!(p.update.is_empty());
        assert_eq!(g.condition.reason, REASON_FAILED);
        assert_eq!(g.status.failed, ["s-a-web"]);
    }

    #[test]
    fn new_children_are_created_and_unselected_ones_go_last() {
        let c = case(
            &[("a", "canary", 0), ("z", "other", 1)],
            strategy(&[("canary", Some("canary"), None)]),
        );
        let (p, g) = c.gate();
        assert_eq!(names(&p.create), ["s-a-web"]);
        assert!(p.update.is_empty(), "z waits for the canary");
        assert_eq!(g.status.steps.len(), 2);
        assert_eq!(g.status.steps[1].name, REMAINING);
        assert_eq!(g.members, [vec!["s-a-web"], vec!["s-z-web"]]);
        assert_eq!(g.held, ["s-z-web"]);
        assert_eq!(g.status.steps[1].pending, 1);
    }

    #[test]
    fn max_update_counts_and_percentages() {
        let v = |j: serde_json::Value| max_update(Some(&j), 10);
        assert_eq!(v(serde_json::json!(3)), 3);
        assert_eq!(v(serde_json::json!("25%")), 3);
        assert_eq!(v(serde_json::json!("1%")), 1);
        assert_eq!(max_update(Some(&serde_json::json!("1%")), 0), 1);
        assert_eq!(max_update(None, 7), 7);
    }
}
