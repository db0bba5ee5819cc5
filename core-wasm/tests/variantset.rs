//! PackageVariantSet rendering end to end: plans, idempotence, template
//! errors named by field, hostile templates, and property tests that no
//! expression or template makes the core panic.

use std::collections::BTreeMap;

use proptest::prelude::*;
use pv_core::api::{ObjectMeta, PackageRevision, PackageVariant, Upstream};
use pv_core::krm::cel::{CelEnv, CelError, CelObject, Limits, ObjectInput, Variables};
use pv_core::variantset::types::{
    DownstreamTemplate, InjectionSelectorTemplate, MapExpr, ObjectSelector, PackageContextTemplate,
    RepositoryTarget,
};
use pv_core::variantset::{
    render, render_with, status, ClusterObject, PackageVariantSet, PackageVariantTemplate,
    RenderError, Repository, Target, TargetObjects,
};

fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: name.into(),
        namespace: "ns".into(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ObjectMeta::default()
    }
}

fn upstream_pr() -> PackageRevision {
    let mut pr = PackageRevision {
        metadata: meta("up-pkg-v1", &[("team", "platform")]),
        ..PackageRevision::default()
    };
    pr.spec.repository = "blueprints".into();
    pr.spec.package_name = "basens".into();
    pr.spec.workspace_name = "v1".into();
    pr.spec.revision = 1;
    pr
}

fn repo(name: &str, labels: &[(&str, &str)]) -> Repository {
    Repository {
        api_version: "config.porch.kpt.dev/v1alpha1".into(),
        kind: "Repository".into(),
        metadata: meta(name, labels),
        ..Repository::default()
    }
}

fn set(targets: Vec<Target>) -> PackageVariantSet {
    let mut pvs = PackageVariantSet {
        api_version: "config.porch.kpt.dev/v1alpha2".into(),
        kind: "PackageVariantSet".into(),
        metadata: meta("fleet", &[]),
        ..PackageVariantSet::default()
    };
    pvs.metadata.uid = "uid-fleet".into();
    pvs.spec.upstream = Some(Upstream {
        repo: "blueprints".into(),
        package: "basens".into(),
        revision: 1,
        workspace_name: String::new(),
    });
    pvs.spec.targets = targets;
    pvs
}

fn explicit(repos: &[&str], template: Option<PackageVariantTemplate>) -> Target {
    Target {
        repositories: Some(
            repos
                .iter()
                .map(|r| RepositoryTarget {
                    name: r.to_string(),
                    package_names: vec![],
                })
                .collect(),
        ),
        template,
        ..Target::default()
    }
}

fn label_expr(value_expr: &str) -> PackageVariantTemplate {
    PackageVariantTemplate {
        label_exprs: vec![MapExpr {
            key: Some("k".into()),
            value_expr: Some(value_expr.into()),
            ..MapExpr::default()
        }],
        ..PackageVariantTemplate::default()
    }
}

fn repos() -> Vec<Repository> {
    vec![
        repo("edge-1", &[("region", "eu"), ("tier", "edge")]),
        repo("edge-2", &[("region", "us"), ("tier", "edge")]),
        repo("core-1", &[("region", "eu"), ("tier", "core")]),
    ]
}

fn template_error(pvs: &PackageVariantSet) -> String {
    match render(pvs, &[upstream_pr()], &repos(), &TargetObjects::new(), &[]) {
        Err(e @ RenderError::Template { .. }) => {
            assert_eq!(e.reason(), status::REASON_UNEXPECTED_ERROR);
            e.to_string()
        }
        other => panic!("expected a template error, got {other:?}"),
    }
}

#[test]
fn renders_names_and_plans_children() {
    let template = PackageVariantTemplate {
        downstream: Some(DownstreamTemplate {
            package_expr: Some("packageDefault + '-' + repository.labels['region']".into()),
            ..DownstreamTemplate::default()
        }),
        labels: [("static".to_string(), "yes".to_string())].into(),
        label_exprs: vec![MapExpr {
            key_expr: Some("'tier'".into()),
            value_expr: Some("repository.labels['tier']".into()),
            ..MapExpr::default()
        }],
        annotation_exprs: vec![MapExpr {
            key: Some("owner".into()),
            value_expr: Some("upstream.labels['team']".into()),
            ..MapExpr::default()
        }],
        package_context: Some(PackageContextTemplate {
            remove_keys: vec!["b".into(), "a".into()],
            remove_key_exprs: vec!["'a'".into(), "'c'".into()],
            ..PackageContextTemplate::default()
        }),
        injectors: vec![InjectionSelectorTemplate {
            name_expr: Some("target.repo + '-cfg'".into()),
            ..InjectionSelectorTemplate::default()
        }],
        ..PackageVariantTemplate::default()
    };
    let pvs = set(vec![
        explicit(&["edge-1", "edge-2"], Some(template)),
        Target {
            repository_selector: Some(pv_core::variantset::LabelSelector {
                match_labels: [("tier".to_string(), "core".to_string())].into(),
                match_expressions: vec![],
            }),
            ..Target::default()
        },
    ]);
    let out = render(&pvs, &[upstream_pr()], &repos(), &TargetObjects::new(), &[]).unwrap();
    let names: Vec<&str> = out
        .package_variants
        .iter()
        .map(|p| p.metadata.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "fleet-edge-1-basens-eu",
            "fleet-edge-2-basens-us",
            "fleet-core-1-basens"
        ]
    );
    let first = &out.package_variants[0];
    assert_eq!(first.spec.labels["tier"], "edge");
    assert_eq!(first.spec.labels["static"], "yes");
    assert_eq!(first.spec.annotations["owner"], "platform");
    assert_eq!(
        first.spec.package_context.as_ref().unwrap().remove_keys,
        vec!["a", "b", "c"]
    );
    assert_eq!(first.spec.injectors[0].name, "edge-1-cfg");
    assert_eq!(
        first.metadata.labels["config.porch.kpt.dev/packagevariantset"],
        "uid-fleet"
    );
    assert_eq!(out.plan.create.len(), 3);
    assert_eq!(out.stats.compiled_expressions, 7);
    assert_eq!(out.conditions, status::reconciled());
}

#[test]
fn a_second_render_of_an_unchanged_set_writes_nothing() {
    let pvs = set(vec![explicit(
        &["edge-1", "edge-2", "core-1"],
        Some(label_expr("repoDefault + '-x'")),
    )]);
    let first = render(&pvs, &[upstream_pr()], &repos(), &TargetObjects::new(), &[]).unwrap();
    assert_eq!(first.plan.writes(), 3);
    // What the API server would return: the created objects with server
    // fields filled in.
    let existing: Vec<PackageVariant> = first
        .plan
        .create
        .iter()
        .cloned()
        .map(|mut pv| {
            pv.metadata.resource_version = "17".into();
            pv.metadata.uid = format!("uid-{}", pv.metadata.name);
            pv
        })
        .collect();
    let second = render(
        &pvs,
        &[upstream_pr()],
        &repos(),
        &TargetObjects::new(),
        &existing,
    )
    .unwrap();
    assert!(second.plan.is_noop(), "{:?}", second.plan);
    assert_eq!(second.plan.unchanged.len(), 3);

    // A changed template updates exactly the children whose spec changes.
    let changed = set(vec![explicit(
        &["edge-1", "edge-2", "core-1"],
        Some(label_expr(
            "repoDefault == 'core-1' ? 'y' : repoDefault + '-x'",
        )),
    )]);
    let third = render(
        &changed,
        &[upstream_pr()],
        &repos(),
        &TargetObjects::new(),
        &existing,
    )
    .unwrap();
    assert_eq!(third.plan.update.len(), 1);
    assert_eq!(third.plan.update[0].metadata.resource_version, "17");
    assert_eq!(third.plan.unchanged.len(), 2);

    // Dropping a target deletes its child.
    let fewer = set(vec![explicit(
        &["edge-1", "edge-2"],
        Some(label_expr("repoDefault + '-x'")),
    )]);
    let fourth = render(
        &fewer,
        &[upstream_pr()],
        &repos(),
        &TargetObjects::new(),
        &existing,
    )
    .unwrap();
    assert_eq!(fourth.plan.delete.len(), 1);
    assert_eq!(fourth.plan.delete[0].metadata.name, "fleet-core-1-basens");
}

#[test]
fn long_identities_are_hashed() {
    let long_repo = "r".repeat(60);
    let mut repos = repos();
    repos.push(repo(&long_repo, &[]));
    let pvs = set(vec![explicit(&[&long_repo], None)]);
    let out = render(&pvs, &[upstream_pr()], &repos, &TargetObjects::new(), &[]).unwrap();
    let name = &out.package_variants[0].metadata.name;
    assert_eq!(name.len(), 63);
    assert!(name.starts_with("fleet-rrrr"));
}

#[test]
fn template_errors_name_the_field() {
    let syntax = template_error(&set(vec![explicit(&["edge-1"], Some(label_expr("1 +")))]));
    assert!(
        syntax.starts_with("template.labelExprs[0].valueExpr: ERROR: <input>:1:4: Syntax error:"),
        "{syntax}"
    );

    let not_string = PackageVariantTemplate {
        downstream: Some(DownstreamTemplate {
            package_expr: Some("size(repoDefault)".into()),
            ..DownstreamTemplate::default()
        }),
        ..PackageVariantTemplate::default()
    };
    assert_eq!(
        template_error(&set(vec![explicit(&["edge-1"], Some(not_string))])),
        "template.downstream.packageExpr: unsupported type conversion from 'int' to string"
    );

    let unknown = template_error(&set(vec![explicit(
        &["edge-1"],
        Some(label_expr("nope + 'x'")),
    )]));
    assert_eq!(
        unknown,
        "template.labelExprs[0].valueExpr: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope + 'x'\n | ^"
    );

    let missing = template_error(&set(vec![explicit(
        &["edge-1"],
        Some(label_expr("repository.labels['zone']")),
    )]));
    assert_eq!(
        missing,
        "template.labelExprs[0].valueExpr: no such key: zone"
    );

    let early = PackageVariantTemplate {
        downstream: Some(DownstreamTemplate {
            repo_expr: Some("repository.name".into()),
            ..DownstreamTemplate::default()
        }),
        ..PackageVariantTemplate::default()
    };
    assert_eq!(
        template_error(&set(vec![explicit(&["edge-1"], Some(early))])),
        "template.downstream.repoExpr: no such attribute(s): repository"
    );

    let missing_repo = PackageVariantTemplate {
        downstream: Some(DownstreamTemplate {
            repo: Some("nowhere".into()),
            ..DownstreamTemplate::default()
        }),
        ..PackageVariantTemplate::default()
    };
    assert_eq!(
        template_error(&set(vec![explicit(&["edge-1"], Some(missing_repo))])),
        "repository \"nowhere\" could not be loaded"
    );

    let injector = PackageVariantTemplate {
        injectors: vec![InjectionSelectorTemplate {
            name_expr: Some("target.name".into()),
            ..InjectionSelectorTemplate::default()
        }],
        ..PackageVariantTemplate::default()
    };
    assert_eq!(
        template_error(&set(vec![explicit(&["edge-1"], Some(injector))])),
        "template.injectors[0].nameExpr: no such key: name"
    );
}

#[test]
fn one_bad_target_means_no_plan() {
    // The last of three targets fails: nothing at all is planned.
    let pvs = set(vec![explicit(
        &["edge-1", "edge-2", "core-1"],
        Some(label_expr("repository.labels['tier'] == 'core' ? 1 : 'ok'")),
    )]);
    match render(&pvs, &[upstream_pr()], &repos(), &TargetObjects::new(), &[]) {
        Err(RenderError::Template {
            repo_default,
            target_index,
            ..
        }) => assert_eq!((repo_default.as_str(), target_index), ("core-1", 0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hostile_templates_fail_their_field() {
    // Exponential list: 6 nested comprehensions over a 10-element list
    // (10^6 evaluations of the body).
    let ten = "[0,1,2,3,4,5,6,7,8,9]";
    let mut body = "repoDefault".to_string();
    for v in ["a", "b", "c", "d", "e", "f"] {
        body = format!("{ten}.map({v}, {body})");
    }
    let huge_list = format!("string(size({body}))");
    let e = template_error(&set(vec![explicit(
        &["edge-1"],
        Some(label_expr(&huge_list)),
    )]));
    assert!(
        e.starts_with("template.labelExprs[0].valueExpr: expression is too expensive"),
        "{e}"
    );

    // A string doubled by repetition in the source: refused by the AST
    // limits (or the token limit, or the cost estimate).
    let mut doubled = "repoDefault".to_string();
    for _ in 0..6 {
        doubled = format!("{doubled} + {doubled}");
    }
    let e = template_error(&set(vec![explicit(
        &["edge-1"],
        Some(label_expr(&doubled)),
    )]));
    assert!(
        e.starts_with("template.labelExprs[0].valueExpr: expression"),
        "{e}"
    );

    // A large annotation concatenated many times.
    let mut big = repo("edge-1", &[]);
    big.metadata
        .annotations
        .insert("blob".into(), "x".repeat(200_000));
    let expr = ["repository.annotations['blob']"; 8].join(" + ");
    let pvs = set(vec![explicit(&["edge-1"], Some(label_expr(&expr)))]);
    match render(&pvs, &[upstream_pr()], &[big], &TargetObjects::new(), &[]) {
        Err(RenderError::Template { error, .. }) => {
            assert!(error.to_string().contains("too expensive"), "{error}")
        }
        other => panic!("{other:?}"),
    }

    // A 1 MB source is refused before parsing.
    let e = template_error(&set(vec![explicit(
        &["edge-1"],
        Some(label_expr(&"(".repeat(1 << 20))),
    )]));
    assert!(e.contains("bytes long, more than the limit"), "{e}");
}

#[test]
fn the_render_budget_bounds_total_work() {
    let names: Vec<String> = (0..50).map(|i| format!("r{i}")).collect();
    let repos: Vec<Repository> = names.iter().map(|n| repo(n, &[])).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let pvs = set(vec![explicit(
        &refs,
        Some(label_expr("repoDefault + packageDefault")),
    )]);
    let limits = Limits {
        max_render_cost: 200,
        ..Limits::default()
    };
    match render_with(
        &pvs,
        &[upstream_pr()],
        &repos,
        &TargetObjects::new(),
        &[],
        &[],
        limits,
    ) {
        Err(RenderError::Template { error, .. }) => {
            assert!(error.to_string().contains("budget"), "{error}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn expressions_compile_once_per_render() {
    let names: Vec<String> = (0..200).map(|i| format!("r{i}")).collect();
    let repos: Vec<Repository> = names.iter().map(|n| repo(n, &[])).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut t = label_expr("repoDefault + '-a'");
    t.annotation_exprs = vec![MapExpr {
        key: Some("b".into()),
        value_expr: Some("packageDefault".into()),
        ..MapExpr::default()
    }];
    let pvs = set(vec![explicit(&refs, Some(t))]);
    let out = render(&pvs, &[upstream_pr()], &repos, &TargetObjects::new(), &[]).unwrap();
    assert_eq!(out.stats.targets, 200);
    assert_eq!(out.stats.compiled_expressions, 2);
    assert_eq!(out.stats.evaluations, 400);
}

#[test]
fn only_metadata_of_selected_objects_reaches_cel() {
    let obj: ClusterObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "edge-1", "namespace": "ns", "labels": {"pick": "me"},
                     "annotations": {"a": "b"}},
        "data": {"secret": "hunter2"}
    }))
    .unwrap();
    let target = |expr: &str| {
        set(vec![Target {
            object_selector: Some(ObjectSelector {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                ..ObjectSelector::default()
            }),
            template: Some(label_expr(expr)),
            ..Target::default()
        }])
    };
    let objects = TargetObjects::from_objects(vec![obj]);
    let ok = render(
        &target("target.name + target.annotations['a']"),
        &[upstream_pr()],
        &repos(),
        &objects,
        &[],
    )
    .unwrap();
    assert_eq!(ok.package_variants[0].spec.labels["k"], "edge-1b");
    let err = render(
        &target("target.data['secret']"),
        &[upstream_pr()],
        &repos(),
        &objects,
        &[],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "template.labelExprs[0].valueExpr: no such key: data"
    );
}

#[test]
fn controller_failures_map_to_upstream_reasons() {
    let mut invalid = set(vec![]);
    invalid.spec.upstream = None;
    let e = render(&invalid, &[], &[], &TargetObjects::new(), &[]).unwrap_err();
    assert_eq!(e.reason(), status::REASON_VALIDATION_ERROR);
    assert_eq!(
        e.to_string(),
        "spec.upstream is a required field; must specify at least one item in spec.targets"
    );
    let conditions = e.conditions();
    assert_eq!(conditions[0].type_, "Stalled");
    assert_eq!(conditions[0].status, "True");
    assert_eq!(conditions[1].type_, "Ready");
    assert_eq!(conditions[1].status, "False");

    let pvs = set(vec![explicit(&["edge-1"], None)]);
    let e = render(&pvs, &[], &repos(), &TargetObjects::new(), &[]).unwrap_err();
    assert_eq!(e.reason(), status::REASON_UPSTREAM_NOT_FOUND);
    assert_eq!(
        e.to_string(),
        "could not find upstream package revision 'basens/1' in repo 'blueprints'"
    );

    let unknown = set(vec![Target {
        object_selector: Some(ObjectSelector {
            api_version: "example.com/v1".into(),
            kind: "Cluster".into(),
            ..ObjectSelector::default()
        }),
        ..Target::default()
    }]);
    let e = render(
        &unknown,
        &[upstream_pr()],
        &repos(),
        &TargetObjects::new(),
        &[],
    )
    .unwrap_err();
    assert_eq!(e.reason(), status::REASON_NO_MATCHING_TARGETS);
    let known = TargetObjects::new().with_kind("example.com/v1", "Cluster");
    let out = render(&unknown, &[upstream_pr()], &repos(), &known, &[]).unwrap();
    assert!(out.package_variants.is_empty() && out.plan.is_noop());
}

// ---------------------------------------------------------------------------
// Property tests: nothing panics.

/// Fragments that make syntactically interesting CEL (and garbage).
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "repoDefault",
            "packageDefault",
            "upstream",
            "target",
            "repository",
            "x",
            "int",
            "1",
            "-1",
            "0",
            "1.5",
            "1u",
            "1e",
            "0x",
            "9223372036854775807",
            "true",
            "null",
            "'a'",
            "\"b\"",
            "'''c'''",
            "r'd'",
            "b'e'",
            "'\\u12'",
            "'\\x'",
            "'",
            "\"",
            "`",
            "+",
            "-",
            "*",
            "/",
            "%",
            "==",
            "!=",
            "<",
            "<=",
            ">",
            ">=",
            "&&",
            "||",
            "!",
            "?",
            ":",
            ".",
            ",",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            "in",
            ".?",
            "[?",
            ".map(",
            ".filter(",
            ".all(",
            ".exists(",
            ".exists_one(",
            "has(",
            "size(",
            "string(",
            "int(",
            ".matches(",
            ".startsWith(",
            ".contains(",
            "dyn(",
            "type(",
            ".labels",
            ".name",
            "['k']",
            "[0]",
            "Foo{",
            "@in",
            "\n",
            " ",
        ])
        .prop_map(str::to_string),
        "[a-z]{1,3}",
        "\\PC{0,4}",
    ]
}

fn expression() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(fragment(), 0..40).prop_map(|v| v.join("")),
        prop::collection::vec(fragment(), 0..40).prop_map(|v| v.join(" ")),
        "\\PC{0,120}",
        any::<String>(),
    ]
}

fn env_vars<'a>(target: &'a CelObject, repository: &'a CelObject) -> Variables<'a> {
    Variables {
        repo_default: "repo",
        package_default: "pkg",
        upstream: Some(target),
        target: Some(target),
        repository: Some(repository),
    }
}

/// `PROPTEST_CASES` when set (for long fuzzing runs), else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(2000), ..ProptestConfig::default() })]

    #[test]
    fn random_expressions_never_panic(src in expression()) {
        let input = ObjectInput {
            name: "n".into(),
            namespace: "ns".into(),
            labels: BTreeMap::from([("k".to_string(), "v".to_string())]),
            annotations: BTreeMap::new(),
        };
        let target = CelObject::object(&input);
        let repository = CelObject::target_defaults("r", "p");
        let result = CelEnv::default().eval_source(&src, &env_vars(&target, &repository));
        if let Err(CelError::Syntax(msg)) = &result {
            prop_assert!(msg.starts_with("ERROR: <input>"), "{msg}");
        }
    }
}

fn map_expr() -> impl Strategy<Value = MapExpr> {
    (
        proptest::option::of("[a-z]{0,3}"),
        proptest::option::of("[a-z]{0,3}"),
        proptest::option::of(expression()),
        proptest::option::of(expression()),
    )
        .prop_map(|(key, value, key_expr, value_expr)| MapExpr {
            key,
            value,
            key_expr,
            value_expr,
        })
}

fn template() -> impl Strategy<Value = PackageVariantTemplate> {
    (
        proptest::option::of(expression()),
        proptest::option::of(expression()),
        prop::collection::vec(map_expr(), 0..3),
        prop::collection::vec(expression(), 0..2),
        proptest::option::of(expression()),
    )
        .prop_map(
            |(repo_expr, package_expr, label_exprs, remove_key_exprs, name_expr)| {
                PackageVariantTemplate {
                    downstream: Some(DownstreamTemplate {
                        repo_expr,
                        package_expr,
                        ..DownstreamTemplate::default()
                    }),
                    label_exprs,
                    package_context: Some(PackageContextTemplate {
                        remove_key_exprs,
                        ..PackageContextTemplate::default()
                    }),
                    injectors: name_expr
                        .map(|e| InjectionSelectorTemplate {
                            name_expr: Some(e),
                            ..InjectionSelectorTemplate::default()
                        })
                        .into_iter()
                        .collect(),
                    ..PackageVariantTemplate::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(300), ..ProptestConfig::default() })]

    #[test]
    fn random_templates_never_panic(t in template(), names in prop::collection::vec("\\PC{0,70}", 1..4)) {
        let mut repos = repos();
        repos.extend(names.iter().map(|n| repo(n, &[])));
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let pvs = set(vec![explicit(&refs, Some(t))]);
        let _ = render(&pvs, &[upstream_pr()], &repos, &TargetObjects::new(), &[]);
    }
}

/// The limits keep the recursive parser and evaluator shallow: the worst
/// accepted and rejected inputs run in 512 KiB of stack in an optimised
/// build (a WebAssembly instance has 1 MiB by default). The `cel` crate's
/// ANTLR parser takes about 8 KiB of stack per bracket level optimised and
/// about 150 KiB unoptimised, so debug builds get 8 MiB.
#[test]
fn worst_case_inputs_fit_a_small_stack() {
    let limits = Limits::default();
    let inputs: Vec<String> = vec![
        format!(
            "{}repoDefault{}",
            "(".repeat(limits.max_nesting),
            ")".repeat(limits.max_nesting)
        ),
        format!(
            "{}'x'{}",
            "[".repeat(limits.max_nesting),
            "]".repeat(limits.max_nesting)
        ),
        vec!["repoDefault"; limits.max_ast_depth - 1].join(" + "),
        vec!["repoDefault"; limits.max_tokens / 2].join("+"),
        format!("{}true ? 'a' : 'b'", "!".repeat(limits.max_tokens - 8)),
        format!("string({}1)", "-".repeat(limits.max_tokens - 6)),
        format!("target{}", ".labels".repeat(limits.max_tokens / 2 - 1)),
        format!("target.labels{}", "['k']".repeat(limits.max_tokens / 3 - 2)),
        {
            let mut e = "'x'".to_string();
            for i in 0..limits.max_nesting / 2 {
                e = format!("['a'].map(v{i}, {e})[0]");
            }
            e
        },
        {
            let mut e = "repoDefault".to_string();
            for _ in 0..limits.max_nesting {
                e = format!("(true ? {e} : 'b')");
            }
            e
        },
        // Conditionals nest without brackets: the parser's recursion limit
        // stops them.
        {
            let mut e = "repoDefault".to_string();
            for _ in 0..60 {
                e = format!("repoDefault == 'x' ? 'y' : {e}");
            }
            e
        },
    ];
    let handle = std::thread::Builder::new()
        .stack_size(if cfg!(debug_assertions) {
            8 << 20
        } else {
            512 << 10
        })
        .spawn(move || {
            let input = ObjectInput {
                name: "n".into(),
                namespace: "ns".into(),
                labels: BTreeMap::from([("k".to_string(), "v".to_string())]),
                annotations: BTreeMap::new(),
            };
            let target = CelObject::object(&input);
            let repository = CelObject::target_defaults("r", "p");
            let env = CelEnv::default();
            inputs
                .iter()
                .map(|src| {
                    env.eval_source(src, &env_vars(&target, &repository))
                        .is_ok()
                })
                .collect::<Vec<bool>>()
        })
        .expect("thread");
    let results = handle.join().expect("no stack overflow or panic");
    // Accepted: the bracket-limit, AST-depth and nested-comprehension inputs,
    // and the `!`/`-` chains (the parser folds pairs of unary operators);
    // refused: the nested list (not a string) and the token-limit chains.
    assert_eq!(
        results,
        [true, false, true, false, true, true, false, false, true, true, false]
    );
}
