//! kpt's newer function fields in the render: `when` (a CEL condition
//! over the step's input) and `configRef` (a resource of the package as
//! the function config).

use super::{render, BuiltinsOnly, Files, RenderOptions, RenderOutput};

const DEPLOY: &str =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n";
const LABELS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labels\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  team: a\n";

const SETTINGS: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  size: small\n";

fn run(pipeline: &str, extra: &[(&str, &str)]) -> RenderOutput {
    let mut files = Files::new();
    files.insert(
        "Kptfile".into(),
        format!(
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\npipeline:\n{pipeline}"
        ),
    );
    files.insert("deployment.yaml".into(), DEPLOY.into());
    for (p, t) in extra {
        files.insert((*p).into(), (*t).into());
    }
    render(&files, &RenderOptions::default(), &mut BuiltinsOnly)
}

fn failure(out: &RenderOutput) -> String {
    out.failure
        .as_ref()
        .map(|f| f.message.clone())
        .unwrap_or_default()
}

#[test]
fn a_false_condition_skips_the_step_and_records_it() {
    let out = run(
        "  mutators:\n  - image: set-namespace:v1\n    configMap:\n      namespace: prod\n    when: resources.exists(r, r.kind == 'Secret')\n  - image: set-annotations:v1\n    configMap:\n      owner: a\n    when: resources.exists(r, r.kind == 'Deployment' && r.spec.replicas > 1)\n",
        &[],
    );
    assert!(out.failure.is_none(), "{}", failure(&out));
    let d = &out.files["deployment.yaml"];
    assert!(!d.contains("namespace: prod"), "skipped: {d}");
    assert!(d.contains("owner: a"), "ran: {d}");
    assert!(out
        .log
        .iter()
        .any(|l| l == "[SKIPPED] \"ghcr.io/kptdev/krm-functions-catalog/set-namespace:v1\" (celCondition not met)"));
    assert_eq!(
        out.summary,
        "Successfully executed 1 function(s) in 1 package(s)."
    );
    let k = &out.files["Kptfile"];
    assert!(
        k.contains(
            "        exitCode: 0\n        when: resources.exists(r, r.kind == 'Secret')\n        skipped: true\n"
        ),
        "{k}"
    );
    assert!(
        k.contains(
            "\n        when: resources.exists(r, r.kind == 'Deployment' && r.spec.replicas > 1)\n"
        ),
        "{k}"
    );
    assert!(k.contains("reason: RenderSuccess"), "{k}");
}

#[test]
fn the_condition_sees_only_the_selected_resources() {
    let out = run(
        "  mutators:\n  - image: set-labels:v1\n    configMap:\n      app: web\n    selectors:\n    - kind: ConfigMap\n    when: resources.all(r, r.kind == 'ConfigMap') && size(resources) == 1\n",
        &[("settings.yaml", SETTINGS)],
    );
    assert!(out.failure.is_none(), "{}", failure(&out));
    assert!(out.files["settings.yaml"].contains("app: web"));
    assert!(!out.files["deployment.yaml"].contains("app: web"));
}

#[test]
fn bad_conditions_fail_the_render_naming_the_function() {
    for (when, expect) in [
        ("resources.exists(r,", "failed to compile CEL expression"),
        (
            "size(resources)",
            "CEL expression must return a boolean, got int",
        ),
        ("nope == 1", "undeclared reference to 'nope'"),
        (
            "resources[7].kind == 'x'",
            "failed to evaluate CEL expression",
        ),
    ] {
        let out = run(
            &format!("  mutators:\n  - image: set-labels:v1\n    configMap:\n      a: b\n    when: {when:?}\n"),
            &[],
        );
        let f = failure(&out);
        assert!(
            f.contains("failed to evaluate condition for function \"ghcr.io/kptdev/krm-functions-catalog/set-labels:v1\"")
                && f.contains(expect),
            "{when}: {f}"
        );
        assert!(out.files["Kptfile"].contains("exitCode: 1"), "{when}");
    }
}

#[test]
fn a_config_ref_names_a_resource_of_the_package_as_the_config() {
    let pipeline = "  mutators:\n  - image: set-labels:v1\n    configRef:\n      kind: ConfigMap\n      name: labels\n";
    let out = run(pipeline, &[("labels.yaml", LABELS)]);
    assert!(out.failure.is_none(), "{}", failure(&out));
    assert!(out.files["deployment.yaml"].contains("team: a"));
    // The referenced resource stays in the package.
    assert!(out.files.contains_key("labels.yaml"));

    let missing = run(pipeline, &[]);
    assert!(
        failure(&missing).contains("\"labels\""),
        "{}",
        failure(&missing)
    );

    let two = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: labels\n  namespace: other\ndata:\n  team: b\n";
    let ambiguous = run(pipeline, &[("labels.yaml", LABELS), ("other.yaml", two)]);
    assert!(
        failure(&ambiguous).contains("2 resources"),
        "{}",
        failure(&ambiguous)
    );
    let narrowed = run(
        "  mutators:\n  - image: set-labels:v1\n    configRef:\n      kind: ConfigMap\n      name: labels\n      namespace: other\n",
        &[("labels.yaml", LABELS), ("other.yaml", two)],
    );
    assert!(narrowed.failure.is_none(), "{}", failure(&narrowed));
    assert!(narrowed.files["deployment.yaml"].contains("team: b"));
}

#[test]
fn config_refs_are_validated_with_the_kptfile() {
    for (f, expect) in [
        ("    configRef:\n      name: labels\n", "configRef must specify `kind`"),
        ("    configRef:\n      kind: ConfigMap\n", "configRef must specify `name`"),
        (
            "    configMap:\n      a: b\n    configRef:\n      kind: ConfigMap\n      name: labels\n",
            "functionConfig must specify at most one of `configMap`, `configPath`, or `configRef`",
        ),
        ("    configRef:\n      kind: ConfigMap\n      name: x\n      bogus: 1\n", "field bogus not found in type v1.ResourceReference"),
    ] {
        let out = run(&format!("  mutators:\n  - image: set-labels:v1\n{f}"), &[]);
        assert!(failure(&out).contains(expect), "{f}: {}", failure(&out));
    }
}

#[test]
fn a_runaway_condition_is_refused_before_it_runs() {
    let many: Vec<(String, String)> = (0..200)
        .map(|i| {
            (
                format!("cm-{i}.yaml"),
                format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  k: v\n"
                ),
            )
        })
        .collect();
    let extra: Vec<(&str, &str)> = many.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let started = std::time::Instant::now();
    let out = run(
        "  mutators:\n  - image: set-labels:v1\n    configMap:\n      a: b\n    when: resources.all(a, resources.all(b, resources.all(c, a == c)))\n",
        &extra,
    );
    assert!(failure(&out).contains("too expensive"), "{}", failure(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // One level over the same package is fine.
    let out = run(
        "  mutators:\n  - image: set-labels:v1\n    configMap:\n      a: b\n    when: resources.exists(r, r.metadata.name == 'cm-199')\n",
        &extra,
    );
    assert!(out.failure.is_none(), "{}", failure(&out));
    assert!(out.files["cm-0.yaml"].contains("a: b"));
}
