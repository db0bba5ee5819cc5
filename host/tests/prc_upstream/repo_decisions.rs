//! Upstream's Repository-controller cases (and the PR controller's flag
//! cases) from `conformance/porch-upstream-prc` against `pv_core::repo`:
//! each group has an adapter that reads a case's input, calls our decision,
//! and compares with the case's expectation. Every case of every group
//! present must pass.
//!
//! Times: the cases write `now`, `now-5m`, `now+1h` for offsets from the
//! wall clock at call time. The core never reads a clock, so every case
//! runs at the wall clock (floored to the second, as `metav1.Time` stores
//! times) and, for the time-dependent groups, again at fixed instants on
//! and just before an hour boundary, where cron schedules turn over.

use porch_variants_tests::prc_cases::{case_dirs, expect, from, yaml, Tally};
use std::collections::BTreeMap;
use std::path::Path;

use pv_core::api::package_revision::v1alpha2::PackageRevision;
use pv_core::api::repository::Repository;
use pv_core::repo::cache::{self, ChangeNotifier, DbCacheOptions};
use pv_core::repo::config::{
    self, PackageRevisionControllerConfig, RepositoryControllerConfig, SyncSettings,
};
use pv_core::repo::status::{self, PatchOutcome, RetryStep, State};
use pv_core::repo::time::{Duration, Time};
use pv_core::repo::{cron, discovery, intervals, sync};
use serde_json::{json, Value};

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// `now`, `now-5m`, `now+1h` at `now`; `None` for other text.
fn relative(text: &str, now: Time) -> Option<Time> {
    let rest = text.strip_prefix("now")?;
    if rest.is_empty() {
        return Some(now);
    }
    let d = Duration::parse(rest).ok()?;
    Some(now.plus(d))
}

/// The case's JSON with every relative time replaced by RFC 3339.
fn at_time(v: &Value, now: Time) -> Value {
    match v {
        Value::String(s) => match relative(s, now) {
            Some(t) => json!(t.to_rfc3339()),
            None => v.clone(),
        },
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), at_time(v, now)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| at_time(v, now)).collect()),
        v => v.clone(),
    }
}

/// The case's Repository at `now`. Conditions missing `type`, `status` or
/// `reason` get the empty string, Go's zero value (upstream's tests build
/// conditions in memory without them; our `Condition` requires them).
fn repository(case: &Path, now: Time) -> Result<Repository, String> {
    let mut v = at_time(&yaml(&case.join("input/repository.yaml")), now);
    if let Some(list) = v
        .get_mut("status")
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    {
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            for k in ["type", "status", "reason"] {
                c.entry(k).or_insert(json!(""));
            }
        }
    }
    from(&v, "repository")
}

/// A duration as cases write it: `5m`, `'0'`, `0 (default 20m)` (the
/// first word), or an integer.
fn duration(v: &Value) -> Result<Duration, String> {
    let text = match v {
        Value::String(s) => s.split_whitespace().next().unwrap_or_default().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return Err(format!("not a duration: {v}")),
    };
    Duration::parse(&text).map_err(|e| e.to_string())
}

/// The settings a case's `config.yaml` names (the rest default).
fn settings(case: &Path) -> Result<SyncSettings, String> {
    let c = yaml(&case.join("input/config.yaml"));
    let mut s = SyncSettings::default();
    if let Some(v) = c.get("HealthCheckFrequency") {
        s.health_check_frequency = duration(v)?;
    }
    if let Some(v) = c.get("FullSyncFrequency") {
        s.full_sync_frequency = duration(v)?;
    }
    if let Some(v) = c.get("SyncStaleTimeout") {
        s.sync_stale_timeout = duration(v)?;
    }
    Ok(s)
}

fn output(case: &Path) -> Value {
    yaml(&case.join("expected/output.yaml"))
}

fn sync_decision(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let config = yaml(&case.join("input/config.yaml"));
    let synced = config["coldStartRepos"]
        .as_str()
        .is_some_and(|s| s.contains("contains this repo"));
    let d = sync::determine_sync_decision(&repo, &settings(case)?, synced, now);
    let kind = match d.operation {
        sync::Operation::HealthCheck => "HealthCheck",
        sync::Operation::FullSync => "FullSync",
    };
    expect(
        json!({"type": kind, "syncNecessary": d.sync_necessary}),
        &output(case),
    )
}

fn sync_in_progress(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let got = sync::is_sync_in_progress(&repo, &settings(case)?, now);
    expect(json!({"isSyncInProgress": got}), &output(case))
}

fn full_sync_due(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let got = sync::is_full_sync_due(&repo, &settings(case)?, now);
    expect(json!({"isFullSyncDue": got}), &output(case))
}

fn one_time_sync_due(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let got = sync::is_one_time_sync_due(&repo, now);
    expect(json!({"isOneTimeSyncDue": got}), &output(case))
}

fn health_check_due(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let got = sync::is_health_check_due(&repo, &settings(case)?, now);
    expect(json!({"isHealthCheckDue": got}), &output(case))
}

fn error_retry_due(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let got = sync::is_error_retry_due(&repo, now);
    expect(json!({"isErrorRetryDue": got}), &output(case))
}

/// A duration expectation: `3m` (with `tolerance: ±2s`), or `between 0
/// and 5m (inclusive)` (tolerance `range`), optionally followed by `; by
/// the code: 5m` (then also exact).
fn check_duration(got: Duration, want: &Value, tolerance: &Value) -> Result<(), String> {
    let text = want.as_str().ok_or("duration expectation is not text")?;
    let mismatch = || format!("got {got}, want {text}");
    if tolerance.as_str() == Some("range") {
        let (range, exact) = match text.split_once("; by the code: ") {
            Some((r, e)) => (r, Some(e)),
            None => (text, None),
        };
        let bounds = range
            .strip_prefix("between ")
            .and_then(|r| r.strip_suffix(" (inclusive)"))
            .and_then(|r| r.split_once(" and "))
            .ok_or_else(|| format!("unknown range {text}"))?;
        let (lo, hi) = (duration(&json!(bounds.0))?, duration(&json!(bounds.1))?);
        check(lo <= got && got <= hi, mismatch)?;
        if let Some(e) = exact {
            check(got == duration(&json!(e))?, mismatch)?;
        }
        return Ok(());
    }
    let want = duration(want)?;
    let slack = match tolerance.as_str() {
        Some(t) => duration(&json!(t.trim_start_matches('±')))?,
        None => Duration::ZERO,
    };
    check(
        got.saturating_sub(want).as_nanos().abs() <= slack.as_nanos(),
        mismatch,
    )
}

/// A time expectation: `now`, `zero time`, `now+1h (±2s)`, `after now and
/// before now+61m`, `non-zero time (= schedule.Next(lastFullSyncTime))`.
fn check_time(got: Option<Time>, want: &str, now: Time, repo: &Repository) -> Result<(), String> {
    let shown = got.map_or("none".to_string(), |t| t.to_rfc3339());
    let mismatch = || format!("got {shown}, want {want}");
    let got_t = got.unwrap_or(Time::ZERO);
    if want == "zero time" {
        return check(got_t.is_zero(), mismatch);
    }
    if let Some(rest) = want.strip_prefix("after ") {
        let (lo, hi) = rest
            .split_once(" and before ")
            .ok_or_else(|| format!("unknown expectation {want}"))?;
        let lo = relative(lo, now).ok_or_else(|| format!("bad time {lo}"))?;
        let hi = relative(hi, now).ok_or_else(|| format!("bad time {hi}"))?;
        return check(got_t.after(lo) && got_t.before(hi), mismatch);
    }
    if want.starts_with("non-zero time (= schedule.Next(lastFullSyncTime))") {
        let schedule = intervals::schedule(repo).ok_or("no valid schedule")?;
        let next = schedule.next(intervals::last_full_sync_time(repo));
        return check(!got_t.is_zero() && got == next, mismatch);
    }
    let (at, slack) = match want.split_once(" (±") {
        Some((t, s)) => (t, duration(&json!(s.trim_end_matches(')')))?),
        None => (want, Duration::ZERO),
    };
    let at = relative(at, now).ok_or_else(|| format!("unknown expectation {want}"))?;
    // Second precision, as metav1.Time.
    let diff = Time::from_unix(got_t.unix_secs(), 0).since(at);
    check(diff.as_nanos().abs() <= slack.as_nanos(), mismatch)
}

fn sync_intervals(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let want = output(case);
    let s = settings(case)?;
    let tolerance = &want["tolerance"];
    if let Some(w) = want.get("calculateNextSyncInterval") {
        return check_duration(intervals::next_sync_interval(&repo, &s, now), w, tolerance);
    }
    if let Some(w) = want.get("getRequeueInterval") {
        return check_duration(intervals::requeue_interval(&repo, &s, now), w, tolerance);
    }
    if let Some(w) = want.get("staleTimeout") {
        return check_duration(
            intervals::stale_timeout(s.sync_stale_timeout),
            w,
            &Value::Null,
        );
    }
    let text = |w: &Value| w.as_str().unwrap_or_default().to_string();
    if let Some(w) = want.get("nextFullSyncTime") {
        let got = intervals::next_full_sync_time(&repo, &s, now);
        return check_time(got, &text(w), now, &repo);
    }
    if let Some(w) = want.get("lastFullSyncTime") {
        let got = intervals::last_full_sync_time(&repo);
        return check_time(Some(got), &text(w), now, &repo);
    }
    if let Some(w) = want.get("lastStatusUpdateTime") {
        let got = intervals::last_status_update_time(&repo);
        return check_time(Some(got), &text(w), now, &repo);
    }
    Err(format!("unknown expectation {want}"))
}

fn retry_interval(case: &Path, _now: Time) -> Result<(), String> {
    let text = std::fs::read_to_string(case.join("input/error.txt")).map_err(|e| e.to_string())?;
    let got = intervals::retry_interval(text.trim_end_matches('\n'));
    let want = duration(&output(case)["retryInterval"])?;
    check(got == want, || format!("got {got}, want {want}"))
}

/// An error expectation: `null`, `{contains: text}`, `{any: true,
/// full_text_derived: text}` against the error text (if any).
fn check_error(got: Option<String>, want: &Value) -> Result<(), String> {
    let mismatch = || format!("error {got:?}, want {want}");
    match (&got, want) {
        (None, Value::Null) => Ok(()),
        (Some(_), Value::Null) | (None, _) => Err(mismatch()),
        (Some(e), w) => {
            if let Some(c) = w.get("contains").and_then(Value::as_str) {
                check(e.contains(c), mismatch)?;
            }
            if let Some(full) = w.get("full_text_derived").and_then(Value::as_str) {
                check(e == full, mismatch)?;
            }
            check(
                w.get("contains").is_some() || w.get("any") == Some(&json!(true)),
                mismatch,
            )
        }
    }
}

/// RFC 7386 JSON merge patch (to check what a patch does).
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// The calls a case expects: `(call name, returns)` in order, and the
/// forbidden ones.
fn expected_calls(case: &Path) -> (Vec<(String, Value)>, Vec<String>) {
    let calls = yaml(&case.join("expected/calls.yaml"));
    let list = calls["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["call"].as_str().unwrap_or_default().to_string(),
                c.clone(),
            )
        })
        .collect();
    let forbidden = calls["forbidden"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect();
    (list, forbidden)
}

fn clear_run_once(case: &Path, now: Time) -> Result<(), String> {
    let repo = repository(case, now)?;
    let (calls, forbidden) = expected_calls(case);
    let client = yaml(&case.join("input/client.yaml"));
    let err = match sync::clear_one_time_sync_flag(&repo) {
        None => {
            check(calls.is_empty(), || format!("no patch, want {calls:?}"))?;
            check(forbidden.iter().any(|c| c == "client.Patch"), || {
                "no patch made but the case does not forbid one".to_string()
            })?;
            None
        }
        Some(patch) => {
            let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
            check(names == ["client.Patch"], || {
                format!("one patch, want {names:?}")
            })?;
            let mut patched = serde_json::to_value(&repo).map_err(|e| e.to_string())?;
            merge_patch(&mut patched, &patch);
            check(patched["spec"]["sync"].get("runOnceAt").is_none(), || {
                format!("runOnceAt not removed by {patch}")
            })?;
            check(
                patched["spec"] == json!({"sync": {}})
                    || patched["spec"]["sync"].get("schedule").is_some(),
                || format!("patch {patch} changed more than runOnceAt"),
            )?;
            // The fake client's answer.
            client["patch"]["returns"]["error"]
                .as_str()
                .map(str::to_string)
        }
    };
    check_error(err, &output(case)["error"])
}

fn pkgrev_build(case: &Path, _now: Time) -> Result<(), String> {
    let repo: Repository = from(&yaml(&case.join("input/repository.yaml")), "repository")?;
    let found: discovery::DiscoveredPackageRevision =
        from(&yaml(&case.join("input/pkgrev.yaml")), "pkgrev")?;
    let pr = discovery::build_package_revision(&repo, &found);
    expect(
        discovery::owned_apply(&pr),
        &yaml(&case.join("expected/packagerevision.yaml")),
    )
}

/// Sets `a.b.c` or `a.b['key']` in a JSON object.
fn set_path(target: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let (dotted, key) = match path.split_once("['") {
        Some((d, k)) => (d, Some(k.trim_end_matches("']"))),
        None => (path, None),
    };
    let mut at = target;
    let parts: Vec<&str> = dotted.split('.').chain(key).collect();
    for (i, p) in parts.iter().enumerate() {
        if !at.is_object() {
            *at = json!({});
        }
        let obj = at.as_object_mut().ok_or("not an object")?;
        if i + 1 == parts.len() {
            obj.insert(p.to_string(), value);
            return Ok(());
        }
        at = obj.entry(p.to_string()).or_insert(json!({}));
    }
    Err(format!("empty path {path}"))
}

fn pkgrev_uptodate(case: &Path, _now: Time) -> Result<(), String> {
    let mut existing_json = yaml(&case.join("input/existing.yaml"));
    let modification = yaml(&case.join("input/desired-modification.yaml"));
    check(
        modification["desired"].as_str() == Some("copy of existing"),
        || format!("unknown desired {modification}"),
    )?;
    let mut desired_json = existing_json.clone();
    for (path, v) in modification["modify"].as_object().into_iter().flatten() {
        set_path(&mut desired_json, path, v.clone())?;
    }
    // Go's zero values for condition fields the case leaves out.
    for pr in [&mut existing_json, &mut desired_json] {
        if let Some(list) = pr
            .get_mut("status")
            .and_then(|s| s.get_mut("packageConditions"))
            .and_then(Value::as_array_mut)
        {
            for c in list.iter_mut().filter_map(Value::as_object_mut) {
                for k in ["type", "status"] {
                    c.entry(k).or_insert(json!(""));
                }
            }
        }
    }
    let existing: PackageRevision = from(&existing_json, "existing")?;
    let desired: PackageRevision = from(&desired_json, "desired")?;
    let got = discovery::package_revision_up_to_date(&existing, &desired);
    expect(json!({"upToDate": got}), &output(case))
}

fn pkgrev_labels(case: &Path, _now: Time) -> Result<(), String> {
    let call = yaml(&case.join("input/call.yaml"));
    let labels = discovery::package_revision_labels(
        call["repoName"].as_str().unwrap_or_default(),
        call["isLatestRevision"].as_bool().unwrap_or_default(),
    );
    expect(json!({ "labels": labels }), &output(case))
}

/// Checks a condition against a case's expectation, where
/// `lastTransitionTime` is `<now>` or `non-zero (now)` and
/// `observedGeneration` may be `metadata.generation`.
fn check_condition(got: &Value, want: &Value, generation: i64, now: Time) -> Result<(), String> {
    let mut want = want.clone();
    if let Some(obj) = want.as_object_mut() {
        if let Some(t) = obj.get("lastTransitionTime").and_then(Value::as_str) {
            check(t == "<now>" || t == "non-zero (now)", || {
                format!("unknown time {t}")
            })?;
            obj.insert("lastTransitionTime".into(), json!(now.to_rfc3339()));
        }
        if obj.get("observedGeneration") == Some(&json!("metadata.generation")) {
            obj.insert("observedGeneration".into(), json!(generation));
        }
    }
    expect(got.clone(), &want)
}

fn repo_status(case: &Path, now: Time) -> Result<(), String> {
    let want = output(case);
    let call = yaml(&case.join("input/call.yaml"));
    let repo = repository(case, now)?;
    let generation = repo.metadata.generation.unwrap_or(0);
    if case.join("input/statusPatchResults.yaml").exists() {
        // updateRepoStatusWithBackoff against a fake status client.
        let results = yaml(&case.join("input/statusPatchResults.yaml"));
        let results = results.as_array().cloned().unwrap_or_default();
        let apply = status::status_apply(&repo, State::Ready, "", now);
        check(
            apply
                .status
                .as_ref()
                .is_some_and(|s| s.conditions.len() == 1),
            || "the apply must carry one condition".to_string(),
        )?;
        let (mut calls, mut err) = (0u32, None);
        loop {
            let outcome = match results.get(calls as usize) {
                Some(Value::String(s)) if s == "ok" => PatchOutcome::Ok,
                Some(r) if r["error"]["conflict"] == json!(true) => PatchOutcome::Conflict,
                Some(r) => PatchOutcome::Failed(r["error"].as_str().unwrap_or("error").into()),
                None => return Err(format!("more than {calls} status patches")),
            };
            calls += 1;
            match status::status_retry_step(calls, outcome) {
                RetryStep::Done => break,
                RetryStep::RetryAfter(_) => continue,
                RetryStep::Fail(e) => {
                    err = Some(e.to_string());
                    break;
                }
            }
        }
        check_error(err, &want["error"])?;
        return expect(json!(calls), &want["statusPatchCalls"]);
    }
    if case.join("expected/calls.yaml").exists() {
        // updateRepoStatusWithBackoff: one forced status apply.
        let state: State = call["status"]
            .as_str()
            .unwrap_or_default()
            .parse()
            .map_err(|e: status::StatusError| e.to_string())?;
        let message = call["syncError"].as_str().unwrap_or_default();
        let apply = status::status_apply(&repo, state, message, now);
        let (calls, _) = expected_calls(case);
        check(calls.len() == 1, || format!("want {calls:?}"))?;
        let (name, c) = &calls[0];
        check(name == "client.Status().Patch", || {
            format!("unexpected {name}")
        })?;
        check(
            c["fieldManager"] == json!(pv_core::repo::FIELD_MANAGER),
            || format!("field manager {}", c["fieldManager"]),
        )?;
        check(c["force"] == json!(true), || "not forced".to_string())?;
        let st = apply.status.clone().unwrap_or_default();
        check(st.conditions.len() == 1, || "one condition".to_string())?;
        let got = serde_json::to_value(&st.conditions[0]).map_err(|e| e.to_string())?;
        check_condition(&got, &c["condition"], generation, now)?;
        check(
            apply.metadata.name == repo.metadata.name
                && apply.metadata.namespace == repo.metadata.namespace,
            || "apply object names another Repository".to_string(),
        )?;
        let current = repo.status.clone().unwrap_or_default();
        check(
            st.last_full_sync_time == current.last_full_sync_time
                && st.git_commit_hash == current.git_commit_hash
                && st.next_full_sync_time == current.next_full_sync_time
                && st.observed_run_once_at == current.observed_run_once_at,
            || "other status fields not copied".to_string(),
        )?;
        return check_error(None, &want["error"]);
    }
    if let Some(kind) = call.get("status") {
        // buildRepositoryCondition.
        let generation = call["repo.generation"].as_i64().unwrap_or(0);
        let built = kind.as_str().unwrap_or_default().parse::<State>().map(|s| {
            status::build_condition(
                generation,
                s,
                call["errorMsg"].as_str().unwrap_or_default(),
                now,
            )
        });
        return match built {
            Err(e) => check_error(Some(e.to_string()), &want["error"]),
            Ok(c) => {
                let got = serde_json::to_value(&c).map_err(|e| e.to_string())?;
                check_condition(&got, &want, generation, now)
            }
        };
    }
    if let Some(changed) = want.get("specChanged") {
        return expect(json!(status::has_spec_changed(&repo)), changed);
    }
    if let Some(conds) = want.get("conditions") {
        let mut repo = repo;
        status::set_condition(
            &mut repo,
            "Ready",
            "True",
            "Ready",
            "Repository is ready",
            now,
        );
        let got = repo.status.unwrap_or_default().conditions;
        let got_list = got.as_slice();
        let want_list = conds.as_array().cloned().unwrap_or_default();
        check(got_list.len() == want_list.len(), || {
            format!("got {got_list:?}, want {want_list:?}")
        })?;
        for (g, w) in got_list.iter().zip(&want_list) {
            let g = serde_json::to_value(g).map_err(|e| e.to_string())?;
            check_condition(&g, w, generation, now)?;
        }
        return Ok(());
    }
    Err(format!("unknown case shape {want}"))
}

fn argv(args: &Value) -> Vec<String> {
    args["argv"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect()
}

fn repo_config(case: &Path, _now: Time) -> Result<(), String> {
    let want = output(case);
    let args = yaml(&case.join("input/args.yaml"));
    let input = yaml(&case.join("input/config.yaml"));
    let c = if !args.is_null() {
        RepositoryControllerConfig::bind_flags(
            args["prefix"].as_str().unwrap_or_default(),
            &argv(&args),
        )
        .map_err(|e| e.to_string())?
    } else if !input.is_null() {
        let mut c = RepositoryControllerConfig::default();
        let int = |k: &str, d: i64| input[k].as_i64().unwrap_or(d);
        c.health_check_frequency = duration(&input["HealthCheckFrequency"])?;
        c.full_sync_frequency = duration(&input["FullSyncFrequency"])?;
        c.sync_stale_timeout = duration(&input["SyncStaleTimeout"])?;
        c.max_concurrent_reconciles = int("MaxConcurrentReconciles", c.max_concurrent_reconciles);
        c.max_concurrent_syncs = int("MaxConcurrentSyncs", c.max_concurrent_syncs);
        c.repo_operation_retry_attempts = int(
            "RepoOperationRetryAttempts",
            c.repo_operation_retry_attempts,
        );
        c
    } else {
        let mut c = RepositoryControllerConfig::default();
        c.validate();
        c
    };
    if let Some(first) = want.get("firstMessage") {
        let lines = c.log_config();
        expect(json!(lines.first().map(|l| l.message.clone())), first)?;
        return expect(json!(lines.len() - 1), &want["warningCount"]);
    }
    if let Some(n) = want.get("MaxConcurrentReconciles") {
        expect(json!(c.max_concurrent_reconciles), n)?;
    }
    if let Some(n) = want.get("MaxConcurrentSyncs") {
        expect(json!(c.max_concurrent_syncs), n)?;
    }
    if let Some(d) = want.get("derived") {
        let got = json!({
            "HealthCheckFrequency": c.health_check_frequency.to_string(),
            "FullSyncFrequency": c.full_sync_frequency.to_string(),
            "SyncStaleTimeout": c.sync_stale_timeout.to_string(),
            "RepoOperationRetryAttempts": c.repo_operation_retry_attempts,
            "cacheType": c.cache_type,
            "cacheDirectory": c.cache_directory,
        });
        let mut d = d.clone();
        for k in [
            "HealthCheckFrequency",
            "FullSyncFrequency",
            "SyncStaleTimeout",
        ] {
            d[k] = json!(duration(&d[k])?.to_string());
        }
        expect(got, &d)?;
    }
    Ok(())
}

fn sync_limiter(case: &Path, _now: Time) -> Result<(), String> {
    let input = yaml(&case.join("input/config.yaml"));
    let capacity = config::sync_limiter_capacity(input["MaxConcurrentSyncs"].as_i64().unwrap_or(0));
    expect(
        json!({"MaxConcurrentSyncs": capacity, "limiterCapacity": capacity}),
        &output(case),
    )
}

/// A case's `env.yaml` as a lookup (null values unset).
fn env(case: &Path) -> impl Fn(&str) -> Option<String> {
    let e = yaml(&case.join("input/env.yaml"));
    let m: BTreeMap<String, String> = e
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
        .collect();
    move |k| m.get(k).cloned()
}

fn cache_config(case: &Path, _now: Time) -> Result<(), String> {
    let want = output(case);
    let input = yaml(&case.join("input/config.yaml"));
    let name = case
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    if name == "user-info-provider" {
        let (a, b) = (cache::user_info(), cache::user_info());
        check(a == b, || "user info changes between calls".to_string())?;
        return expect(json!({"name": a.name, "email": a.email}), &want);
    }
    if name == "build-cache-options" {
        let args = yaml(&case.join("input/args.yaml"));
        let config = RepositoryControllerConfig {
            cache_type: input["cacheType"].as_str().unwrap_or_default().into(),
            use_user_defined_ca_bundle: input["useUserDefinedCaBundle"].as_bool().unwrap_or(false),
            repo_operation_retry_attempts: input["RepoOperationRetryAttempts"]
                .as_i64()
                .unwrap_or(0),
            ..RepositoryControllerConfig::default()
        };
        let db = DbCacheOptions {
            driver: args["dbOptions"]["Driver"]
                .as_str()
                .unwrap_or_default()
                .into(),
            data_source: args["dbOptions"]["DataSource"]
                .as_str()
                .unwrap_or_default()
                .into(),
        };
        let o =
            cache::build_cache_options(&config, db, args["cacheDir"].as_str().unwrap_or_default());
        check(
            o.user_info == cache::user_info() && o.db.data_source == "postgres://test",
            || "options lost the user info or the DB settings".to_string(),
        )?;
        check(
            want["RepoPRChangeNotifier"] == json!("non-nil (no-op)"),
            || "unknown notifier expectation".to_string(),
        )?;
        check(o.change_notifier == ChangeNotifier::NoOp, || {
            "notifier".to_string()
        })?;
        let mut want = want.clone();
        want.as_object_mut()
            .map(|m| m.remove("RepoPRChangeNotifier"));
        return expect(
            json!({
                "CacheType": o.cache_type,
                "DBCacheOptions.Driver": o.db.driver,
                "LocalDirectory": o.local_directory,
                "UseUserDefinedCaBundle": o.use_user_defined_ca_bundle,
                "RepoOperationRetryAttempts": o.repo_operation_retry_attempts,
            }),
            &want,
        );
    }
    if name.starts_with("cache-dir-") {
        let env = env(case);
        let dir = cache::cache_directory(
            input["cacheDirectory"].as_str().unwrap_or_default(),
            env("GIT_CACHE_DIR").as_deref(),
            Some("/home/tester/.cache"),
            "/tmp",
        );
        if let Some(w) = want.get("cacheDir") {
            return expect(json!(dir), w);
        }
        let needle = want["cacheDirContains"].as_str().unwrap_or("?");
        check(dir.contains(needle), || format!("{dir} lacks {needle}"))?;
        // Without a user cache directory: the temporary directory.
        let tmp = cache::cache_directory("", None, None, "/tmp");
        return check(tmp == "/tmp/porch-repo-controller", || tmp.clone());
    }
    if name.starts_with("cache-type-") {
        let got = cache::validate_cache_type(input["cacheType"].as_str().unwrap_or_default());
        return check_error(got.err().map(|e| e.to_string()), &want["error"]);
    }
    if name.starts_with("db-env-") {
        let got = cache::db_options_from_env(env(case));
        check_error(got.as_ref().err().map(|e| e.to_string()), &want["error"])?;
        if let (Ok(o), Some(d)) = (&got, want.get("derived")) {
            expect(json!({"driver": o.driver, "dataSource": o.data_source}), d)?;
        }
        return Ok(());
    }
    Err(format!("unknown case {name}"))
}

fn prc_config(case: &Path, _now: Time) -> Result<(), String> {
    let want = output(case);
    let args = yaml(&case.join("input/args.yaml"));
    let c = if args.is_null() {
        let call = yaml(&case.join("input/call.yaml"));
        check(call["fn"] == json!("InitDefaults"), || {
            format!("unknown call {call}")
        })?;
        PackageRevisionControllerConfig::default()
    } else {
        PackageRevisionControllerConfig::bind_flags(
            args["prefix"].as_str().unwrap_or_default(),
            &argv(&args),
        )
        .map_err(|e| e.to_string())?
    };
    let mut got = json!({
        "max-concurrent-reconciles": c.max_concurrent_reconciles,
        "max-concurrent-renders": c.max_concurrent_renders,
        "repo-operation-retry-attempts": c.repo_operation_retry_attempts,
        "max-grpc-message-size": c.max_grpc_message_size,
    });
    if let Some(d) = want.get("render-requeue-delay") {
        check(duration(d)? == c.render_requeue_delay, || {
            format!("render-requeue-delay {}", c.render_requeue_delay)
        })?;
        got["render-requeue-delay"] = d.clone();
    }
    expect(got, &want)
}

type Adapter = fn(&Path, Time) -> Result<(), String>;

/// Groups, their adapters, and whether the outcome depends on the time
/// (those run at fixed instants too).
const GROUPS: &[(&str, Adapter, bool)] = &[
    ("repo-sync-decision", sync_decision, true),
    ("repo-sync-in-progress", sync_in_progress, true),
    ("repo-full-sync-due", full_sync_due, true),
    ("repo-one-time-sync-due", one_time_sync_due, true),
    ("repo-health-check-due", health_check_due, true),
    ("repo-error-retry-due", error_retry_due, true),
    ("repo-sync-intervals", sync_intervals, true),
    ("repo-retry-interval", retry_interval, false),
    ("repo-clear-run-once", clear_run_once, false),
    ("repo-pkgrev-build", pkgrev_build, false),
    ("repo-pkgrev-uptodate", pkgrev_uptodate, false),
    ("repo-pkgrev-labels", pkgrev_labels, false),
    ("repo-status", repo_status, false),
    ("repo-config", repo_config, false),
    ("repo-sync-limiter", sync_limiter, false),
    ("repo-cache-config", cache_config, false),
    ("prc-config", prc_config, false),
];

/// The wall clock, floored to the second.
fn wall_clock() -> Time {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    Time::from_unix(secs, 0)
}

/// Runs every case of [`GROUPS`], the timed ones at each fixed instant too.
pub fn run() -> Tally {
    let fixed: Vec<Time> = ["2026-04-29T11:59:59Z", "2026-04-29T12:00:00Z"]
        .iter()
        .map(|t| Time::parse_rfc3339(t).expect("fixed instant"))
        .collect();
    let (mut passed, mut failed) = (0, Vec::new());
    for (group, adapter, timed) in GROUPS {
        for (name, case) in case_dirs(group) {
            let mut instants = vec![wall_clock()];
            if *timed {
                instants.extend(&fixed);
            }
            let errors: Vec<String> = instants
                .iter()
                .filter_map(|now| adapter(&case, *now).err().map(|e| format!("at {now}: {e}")))
                .collect();
            if errors.is_empty() {
                passed += 1;
            } else {
                failed.push(format!("{name}: {}", errors.join("; ")));
            }
        }
    }
    Tally {
        passed,
        failed,
        ..Tally::default()
    }
}

/// The cron schedules the cases use parse; the invalid ones do not.
#[test]
fn case_schedules_parse_as_upstream() {
    for s in [
        "*/5 * * * *",
        "*/1 * * * *",
        "0 */6 * * *",
        "0 0 * * *",
        "0 * * * *",
        "0 */1 * * *",
    ] {
        assert!(cron::parse_standard(s).is_ok(), "{s}");
    }
    for s in ["invalid", "invalid cron"] {
        assert!(cron::parse_standard(s).is_err(), "{s}");
    }
}
