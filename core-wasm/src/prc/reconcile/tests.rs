use serde_json::{json, Value};

use super::*;

/// Runs a reconcile to the end, answering each call with `answer`;
/// returns the calls made and the outcome.
fn run(answer: impl Fn(&Call) -> Answer) -> (Vec<Call>, Outcome) {
    let mut input = StepInput {
        namespace: "default".into(),
        name: "repo.pkg.ws".into(),
        now: "2026-01-01T00:00:00Z".into(),
        config: Config::default(),
        answers: Vec::new(),
    };
    let mut calls = Vec::new();
    loop {
        match step(&input) {
            Step::Call { call } => {
                input.answers.push(answer(&call));
                calls.push(call);
                assert!(calls.len() < 100, "runaway reconcile: {calls:?}");
            }
            Step::Done { outcome } => return (calls, outcome),
        }
    }
}

fn pr(extra: Value) -> Value {
    let mut base = json!({
        "apiVersion": "porch.kpt.dev/v1alpha2",
        "kind": "PackageRevision",
        "metadata": {"name": "repo.pkg.ws", "namespace": "default",
            "finalizers": ["porch.kpt.dev/packagerevisions"],
            "ownerReferences": [{"apiVersion": "config.porch.kpt.dev/v1alpha1",
                "kind": "Repository", "name": "repo", "uid": "u1"}]},
        "spec": {"packageName": "pkg", "repository": "repo", "workspaceName": "ws",
            "lifecycle": "Draft"},
    });
    merge(&mut base, extra);
    base
}

fn merge(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

fn content(lifecycle: &str) -> Answer {
    Answer::ok(
        json!({"lifecycle": lifecycle, "resources": {"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n"}}),
    )
}

fn name(c: &Call) -> &'static str {
    match c {
        Call::GetPackageRevision { .. } => "get",
        Call::ReadPackageRevision { .. } => "read",
        Call::GetRepository { .. } => "getRepo",
        Call::MergePatch { .. } => "patch",
        Call::ApplyStatus { .. } => "status",
        Call::ApplySpec { .. } => "spec",
        Call::ListPackageRevisions { .. } => "list",
        Call::GetPackageContent { .. } => "content",
        Call::CreateNewDraft { .. } => "newDraft",
        Call::CreateDraftFromExisting { .. } => "draftFromExisting",
        Call::UpdateResources { .. } => "update",
        Call::CloseDraft { .. } => "close",
        Call::UpdateLifecycle { .. } => "lifecycle",
        Call::DeletePackage { .. } => "delete",
        Call::FetchGit { .. } => "fetch",
        Call::Render { .. } => "render",
    }
}

fn names(calls: &[Call]) -> Vec<&'static str> {
    calls.iter().map(name).collect()
}

#[test]
fn a_missing_object_ends_the_reconcile_quietly() {
    let (calls, outcome) = run(|_| Answer::NotFound {
        message: "gone".into(),
    });
    assert_eq!(names(&calls), ["get"]);
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn init_source_writes_a_draft_once_and_requeues() {
    let obj = pr(json!({"spec": {"source": {"init": {"description": "d"}}}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::CreateNewDraft { .. } => Answer::ok(json!("d1")),
        Call::GetPackageContent { .. } => content("Draft"),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(
        names(&calls),
        ["get", "newDraft", "update", "close", "content", "status", "status", "patch"]
    );
    let Call::UpdateResources { files, message, .. } = &calls[2] else {
        panic!("{calls:?}")
    };
    assert_eq!(message, "init");
    assert!(files["Kptfile"].contains("name: pkg"), "{files:?}");
    let Call::ApplyStatus { object, .. } = &calls[5] else {
        panic!()
    };
    assert_eq!(object["status"]["creationSource"], "init");
    assert!(outcome.requeue);
}

#[test]
fn a_source_already_in_git_is_not_written_again() {
    let obj = pr(json!({"spec": {"source": {"init": {}}}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::CreateNewDraft { .. } => Answer::AlreadyExists {
            message: "exists".into(),
        },
        Call::GetPackageContent { .. } => content("Draft"),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(
        names(&calls),
        ["get", "newDraft", "content", "status", "status", "patch"]
    );
    assert!(outcome.requeue);
}

#[test]
fn a_failed_read_of_the_upstream_is_retried_with_backoff() {
    let obj = pr(json!({"spec": {"source": {"cloneFrom": {"upstreamRef": {"name": "up"}}}}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { name, .. } if name == "repo.pkg.ws" => Answer::ok(obj.clone()),
        Call::GetPackageRevision { .. } => Answer::error("connection refused"),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(names(&calls), ["get", "get", "status"]);
    assert_eq!(
        outcome.error.as_deref(),
        Some("failed to get upstream package \"up\": connection refused")
    );
    let Call::ApplyStatus { object, .. } = &calls[2] else {
        panic!()
    };
    let conds = object["status"]["conditions"].as_array().unwrap();
    assert_eq!(conds.len(), 2);
    assert_eq!(conds[1]["type"], "Rendered");
}

#[test]
fn an_unpublished_upstream_is_a_condition_not_a_retry() {
    let obj = pr(json!({"spec": {"source": {"cloneFrom": {"upstreamRef": {"name": "up"}}}}}));
    let up = pr(json!({"metadata": {"name": "up"}, "spec": {"lifecycle": "Draft"}}));
    let (_, outcome) = run(|c| match c {
        Call::GetPackageRevision { name, .. } if name == "repo.pkg.ws" => Answer::ok(obj.clone()),
        Call::GetPackageRevision { .. } => Answer::ok(up.clone()),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn a_draft_with_its_source_done_renders_then_reports_ready() {
    let obj = pr(json!({"status": {"creationSource": "init"}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => content("Draft"),
        Call::Render { files } => Answer::ok(json!({"files": files})),
        Call::CreateDraftFromExisting { .. } => Answer::ok(json!("d")),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(
        names(&calls),
        [
            "get",
            "status",
            "content",
            "render",
            "draftFromExisting",
            "update",
            "close",
            "status",
            "content",
            "status"
        ]
    );
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn a_full_render_semaphore_requeues_after_the_delay() {
    let obj = pr(json!({"metadata": {"annotations": {"porch.kpt.dev/render-request": "7"}}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => content("Draft"),
        Call::Render { .. } => Answer::ok(json!({"busy": true})),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(names(&calls), ["get", "status", "content", "render"]);
    assert_eq!(outcome.requeue_after_ms, 2000);
}

#[test]
fn a_published_revision_is_kept_while_its_repository_exists() {
    let obj = pr(
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"lifecycle": "Published"}}),
    );
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        _ => Answer::ok(json!({"metadata": {"uid": "u1"}})),
    });
    assert_eq!(names(&calls), ["get", "getRepo", "content"]);
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn a_published_revision_whose_package_left_git_is_let_go() {
    let obj = pr(
        json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"lifecycle": "Published"}}),
    );
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => Answer::NotFound {
            message: "package revision pkg/ws not found".into(),
        },
        Call::ListPackageRevisions { .. } => Answer::ok(json!([])),
        _ => Answer::ok(json!({"metadata": {"uid": "u1"}})),
    });
    assert_eq!(
        names(&calls),
        ["get", "getRepo", "content", "patch", "list"]
    );
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn a_deleted_draft_leaves_git_and_its_finalizer_goes() {
    let obj = pr(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::DeletePackage { .. } => Answer::error("package revision does not exist"),
        Call::ListPackageRevisions { .. } => Answer::ok(json!([])),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(names(&calls), ["get", "delete", "patch", "list"]);
    assert_eq!(outcome, Outcome::default());
}

#[test]
fn publishing_requeues_and_the_next_pass_labels_the_latest() {
    let obj = pr(json!({"spec": {"lifecycle": "Published"}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => content("Proposed"),
        Call::UpdateLifecycle { .. } => Answer::ok(json!({"lifecycle": "Published", "revision": 3,
            "publishedBy": "a", "publishedAt": "2026-01-01T00:00:00Z"})),
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(names(&calls), ["get", "content", "lifecycle", "status"]);
    let Call::ApplyStatus { object, .. } = &calls[3] else {
        panic!()
    };
    assert_eq!(object["status"]["revision"], 3);
    assert!(outcome.requeue);
}

#[test]
fn a_status_apply_without_content_keeps_the_publish_data() {
    let obj = pr(json!({"spec": {"lifecycle": "Published"},
        "status": {"revision": 2, "publishedBy": "x"}}));
    let (calls, _) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => Answer::error("repository is unreachable"),
        _ => Answer::ok(Value::Null),
    });
    let Call::ApplyStatus { object, .. } = &calls[2] else {
        panic!("{calls:?}")
    };
    assert_eq!(object["status"]["revision"], 2);
    assert_eq!(object["status"]["publishedBy"], "x");
}

#[test]
fn a_malformed_answer_is_an_error_not_a_trap() {
    let (_, outcome) = run(|_| Answer::ok(json!({"spec": 7})));
    assert!(outcome.error.unwrap().starts_with("PackageRevision:"));
}

#[test]
fn a_pipeline_failure_records_the_pipelines_message_and_is_not_retried() {
    let obj = pr(json!({"status": {"creationSource": "init"}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => content("Draft"),
        Call::Render { files } => {
            Answer::ok(json!({"files": files, "pipelineError": "function failed"}))
        }
        _ => Answer::ok(Value::Null),
    });
    assert_eq!(
        names(&calls),
        ["get", "status", "content", "render", "status", "status"]
    );
    let Call::ApplyStatus { object, .. } = &calls[4] else {
        panic!("{calls:?}")
    };
    assert_eq!(
        object["status"]["conditions"][0]["message"],
        "function failed"
    );
    assert_eq!(outcome.error, None);
    assert!(outcome
        .log
        .iter()
        .any(|l| l == "render pipeline failed: function failed"));
}

#[test]
fn a_renderer_failure_is_recorded_as_is_and_returned_wrapped() {
    let obj = pr(json!({"status": {"creationSource": "init"}}));
    let (calls, outcome) = run(|c| match c {
        Call::GetPackageRevision { .. } => Answer::ok(obj.clone()),
        Call::GetPackageContent { .. } => content("Draft"),
        Call::Render { .. } => Answer::error("fn-runner unavailable"),
        _ => Answer::ok(Value::Null),
    });
    let Call::ApplyStatus { object, .. } = &calls[4] else {
        panic!("{calls:?}")
    };
    assert_eq!(
        object["status"]["conditions"][0]["message"],
        "fn-runner unavailable"
    );
    assert_eq!(
        outcome.error.as_deref(),
        Some("render failed: fn-runner unavailable")
    );
}

#[test]
fn a_status_apply_without_conditions_sends_no_conditions_key() {
    let obj: PackageRevision = serde_json::from_value(pr(json!({}))).unwrap();
    let Call::ApplyStatus { object, .. } = status::main_status(&obj, &[], None, None) else {
        panic!()
    };
    assert!(object["status"].get("conditions").is_none(), "{object}");
}

#[test]
fn a_referenced_revision_is_read_in_the_objects_namespace() {
    let obj = pr(json!({"spec": {"source": {"copyFrom": {"name": "src"}}}}));
    // As upstream's tests build it: the referenced object has no namespace.
    let src = json!({"spec": {"packageName": "pkg", "repository": "repo",
        "workspaceName": "v1", "lifecycle": "Published"}});
    let (calls, _) = run(|c| match c {
        Call::GetPackageRevision { name, .. } if name == "repo.pkg.ws" => Answer::ok(obj.clone()),
        Call::GetPackageRevision { .. } => Answer::ok(src.clone()),
        Call::GetPackageContent { .. } => content("Published"),
        Call::CreateNewDraft { .. } => Answer::ok(json!("d")),
        _ => Answer::ok(Value::Null),
    });
    let Call::GetPackageContent { revision, .. } = &calls[2] else {
        panic!("{calls:?}")
    };
    assert_eq!(revision.repository.namespace, "default");
    assert_eq!(revision.workspace, "v1");
}
