use serde_json::json;

use super::*;

const NOW: &str = "2026-04-29T12:00:00Z";

fn repo(status: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
        "metadata": {"name": "r", "namespace": "ns", "generation": 2,
                     "finalizers": [crate::repo::FINALIZER]},
        "spec": {"git": {"repo": "https://example.com/r"}},
        "status": status,
    })
}

fn input(answers: Vec<Answer>) -> StepInput {
    StepInput {
        namespace: "ns".into(),
        name: "r".into(),
        now: NOW.into(),
        config: Config::default(),
        synced_since_start: true,
        answers,
    }
}

fn done(s: Step) -> Outcome {
    match s {
        Step::Done { outcome } => outcome,
        Step::Call { call } => panic!("unexpected call {call:?}"),
    }
}

#[test]
fn without_cache_errors_before_any_call() {
    let mut i = input(vec![]);
    i.config.cache_available = false;
    assert_eq!(done(step(&i)).error.as_deref(), Some(CACHE_NOT_AVAILABLE));
}

#[test]
fn sync_in_progress_keeps_reconciling_condition() {
    // §13.2: upstream would apply Ready here.
    let r = repo(json!({"observedGeneration": 2, "conditions": [
        {"type": "Ready", "status": "False", "reason": "Reconciling", "message": "m",
         "lastTransitionTime": "2026-04-29T11:59:00Z"}]}));
    let out = done(step(&input(vec![Answer::ok(r)])));
    assert!(out.requeue);
    assert_eq!(out.requeue_after_ms, 0);
}

#[test]
fn waiting_for_run_once_at_in_error_writes_generation_not_ready() {
    let r = repo(json!({"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "False", "reason": "Error", "message": "tls broke",
         "lastTransitionTime": "2026-04-29T11:59:00Z"}]}));
    let mut r = r;
    r["spec"]["sync"] = json!({"runOnceAt": "2026-04-30T00:00:00Z"});
    let Step::Call {
        call: Call::ApplyRepositoryStatus { object, .. },
    } = step(&input(vec![Answer::ok(r.clone())]))
    else {
        panic!("expected a status apply");
    };
    let status = object.status.unwrap();
    assert_eq!(status.observed_generation, Some(2));
    assert_eq!(status.conditions[0].reason, "Error");
    assert_eq!(
        status.conditions[0].last_transition_time,
        "2026-04-29T11:59:00Z"
    );
    let out = done(step(&input(vec![Answer::ok(r), Answer::ok(json!(null))])));
    assert!(out.requeue_after_ms > 0);
}

#[test]
fn ready_and_nothing_due_still_applies_ready() {
    let r = repo(json!({"observedGeneration": 2,
        "lastFullSyncTime": "2026-04-29T11:59:00Z",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready",
                        "message": "Repository Ready",
                        "lastTransitionTime": "2026-04-29T11:59:00Z"}]}));
    let s = step(&input(vec![Answer::ok(r)]));
    assert!(matches!(
        s,
        Step::Call {
            call: Call::ApplyRepositoryStatus { .. }
        }
    ));
}

#[test]
fn cold_start_full_sync_hands_over_a_job() {
    let r = repo(json!({}));
    let mut i = input(vec![
        Answer::ok(r),
        Answer::ok(json!(null)),
        Answer::ok(json!(true)),
    ]);
    i.synced_since_start = false;
    let out = done(step(&i));
    assert!(out.sync_job.is_some());
    assert_eq!(out.requeue_after_ms, 5 * 60 * 1000);
}

#[test]
fn background_sync_records_count_and_hash_then_releases() {
    let r: Repository = serde_json::from_value(repo(json!({}))).unwrap();
    let mut answers = vec![
        Answer::ok(json!(null)),
        Answer::ok(json!(null)),
        Answer::ok(json!([{}, {}])),
        Answer::ok(json!("abc")),
    ];
    let mk = |answers: &Vec<Answer>| SyncInput {
        repository: r.clone(),
        now: NOW.into(),
        config: Config::default(),
        answers: answers.clone(),
    };
    let Step::Call {
        call: Call::ApplyRepositoryStatus { object, .. },
    } = sync_step(&mk(&answers))
    else {
        panic!("expected the status apply");
    };
    let status = object.status.unwrap();
    assert_eq!(status.package_count, Some(2));
    assert_eq!(status.git_commit_hash, "abc");
    answers.push(Answer::ok(json!(null)));
    assert_eq!(
        sync_step(&mk(&answers)),
        Step::Call {
            call: Call::ReleaseSyncSlot
        }
    );
}

#[test]
fn apply_step_sends_owned_fields_spec_then_status_and_stops_at_first_error() {
    let pr: PackageRevision = serde_json::from_value(json!({
        "apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
        "metadata": {"name": "test-pr", "namespace": "default"},
        "spec": {"packageName": "pkg1"},
        "status": {"revision": 1},
    }))
    .unwrap();
    let Step::Call {
        call: Call::ApplyPackageRevision { force, object, .. },
    } = apply_step(&pr, &[])
    else {
        panic!("no spec apply first");
    };
    assert!(force);
    assert_eq!(object["spec"], json!({"packageName": "pkg1"}));
    assert_eq!(object["status"], json!({}));
    let failed = done(apply_step(&pr, &[Answer::error("spec patch failed")]));
    assert_eq!(failed.error.as_deref(), Some("spec patch failed"));
    let ok = Answer::ok(serde_json::Value::Null);
    assert!(matches!(
        apply_step(&pr, std::slice::from_ref(&ok)),
        Step::Call {
            call: Call::ApplyPackageRevisionStatus { .. }
        }
    ));
    assert_eq!(done(apply_step(&pr, &[ok.clone(), ok])).error, None);
}
