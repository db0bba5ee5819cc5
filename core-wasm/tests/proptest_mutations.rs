//! Property tests of the package mutations: whatever the files hold
//! (garbled YAML, a Kptfile that is not a map, a missing package context,
//! odd annotation values, in-cluster objects of any shape), applying the
//! mutations never panics, and files that are not KRM files come back
//! byte-identical.

use std::collections::BTreeMap;

use proptest::prelude::*;
use pv_core::api::{Function, InjectionSelector, PackageContext, PackageVariant, Pipeline};
use pv_core::variant::mutate::{apply_mutations, kptfiles_equal, PrrRef};
use serde_json::{json, Value};

const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # c\ninfo:\n  description: d\n  readinessGates:\n  - conditionType: x\npipeline:\n  mutators:\n    - image: a\n      name: PackageVariant.pv.f.0\n    - image: b\nstatus:\n  conditions:\n  - type: x\n    status: \"True\"\n";
const CONTEXT: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: p\n  k: v\n";
const POINTS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ep\n  annotations:\n    kpt.dev/config-injection: required\ndata:\n  a: b\n---\napiVersion: hr.example.com/v1\nkind: Team\nmetadata:\n  name: t\n  annotations:\n    kpt.dev/config-injection: optional\nspec:\n  code: x\n";

/// Fragments that steer the YAML scanner and the mutations' lookups.
fn fragment() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "a",
        "kind",
        "Kptfile",
        "ConfigMap",
        "metadata",
        "name",
        "annotations",
        "data",
        "spec",
        "info",
        "status",
        "pipeline",
        "mutators",
        "validators",
        "readinessGates",
        "conditions",
        "kpt.dev/config-injection",
        "required",
        "optional",
        "kptfile.kpt.dev",
        " ",
        "  ",
        "\n",
        "\n  ",
        "\n- ",
        "- ",
        ": ",
        "#",
        "'",
        "\"",
        "|",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "&a ",
        "*a",
        "!!int ",
        "---\n",
        "~",
        "null",
        "5",
        "\t",
        "é",
        "<<: ",
    ])
    .prop_map(String::from)
}

fn text_from(parts: Vec<String>) -> String {
    parts.concat()
}

/// A file's content: a valid template, the template with a fragment
/// spliced in at some byte, or generated text.
fn content(template: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just(template.to_string()),
        2 => (0..template.len(), fragment()).prop_map(move |(at, frag)| {
            let at = (0..=at).rev().find(|i| template.is_char_boundary(*i)).unwrap_or(0);
            format!("{}{}{}", &template[..at], frag, &template[at..])
        }),
        1 => (0..template.len()).prop_map(move |cut| {
            let cut = (0..=cut).rev().find(|i| template.is_char_boundary(*i)).unwrap_or(0);
            template[..cut].to_string()
        }),
        1 => prop::collection::vec(fragment(), 0..40).prop_map(text_from),
        1 => any::<String>(),
    ]
}

fn files() -> impl Strategy<Value = BTreeMap<String, String>> {
    (
        prop::option::weighted(0.9, content(KPTFILE)),
        prop::option::weighted(0.8, content(CONTEXT)),
        prop::option::of(content(POINTS)),
        prop::option::of(content(POINTS).prop_map(|t| t.replace("name: ep", "name: ep2"))),
        any::<String>(),
    )
        .prop_map(|(kptfile, context, a, b, readme)| {
            let mut files = BTreeMap::new();
            let mut put = |name: &str, text: Option<String>| {
                if let Some(t) = text {
                    files.insert(name.to_string(), t);
                }
            };
            put("Kptfile", kptfile);
            put("package-context.yaml", context);
            put("points.yaml", a);
            put("sub/more.json", b);
            put("README.md", Some(readme));
            files
        })
}

fn packagevariant() -> impl Strategy<Value = PackageVariant> {
    let name = prop::sample::select(vec!["pv", "my.pv", "", "a.b.c"]);
    let keys = prop::collection::vec(prop::sample::select(vec!["k", "name", "x.y", ""]), 0..3);
    let fns = prop::collection::vec(prop::sample::select(vec!["f", "set.ns", ""]), 0..3);
    let injectors = prop::collection::vec(prop::sample::select(vec!["east", "t", ""]), 0..3);
    let flags = (any::<bool>(), any::<bool>());
    (name, keys.clone(), keys, fns.clone(), fns, injectors, flags).prop_map(
        |(name, data, remove, mutators, validators, injectors, (typed, context))| {
            let mut pv = PackageVariant::default();
            pv.metadata.name = name.to_string();
            pv.metadata.namespace = "ns".into();
            pv.spec.package_context = context.then(|| PackageContext {
                data: data.iter().map(|k| (k.to_string(), "v".into())).collect(),
                remove_keys: remove.iter().map(|k| k.to_string()).collect(),
            });
            let f = |n: &&str| Function {
                name: n.to_string(),
                image: "img".into(),
                ..Function::default()
            };
            pv.spec.pipeline = Some(Pipeline {
                mutators: mutators.iter().map(f).collect(),
                validators: validators.iter().map(f).collect(),
            });
            pv.spec.injectors = injectors
                .iter()
                .map(|n| InjectionSelector {
                    name: n.to_string(),
                    kind: typed.then(|| "Team".to_string()),
                    ..InjectionSelector::default()
                })
                .collect();
            pv
        },
    )
}

/// In-cluster objects of any shape, including ones of another namespace.
fn candidates() -> impl Strategy<Value = Vec<Value>> {
    let one = prop_oneof![
        Just(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "east"}, "data": {"a": "z"}})
        ),
        Just(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "east", "namespace": "other"}, "data": {"a": "leak"}})
        ),
        Just(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "east"}, "data": null})
        ),
        Just(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "east"}})),
        Just(
            json!({"apiVersion": "hr.example.com/v1", "kind": "Team", "metadata": {"name": "t"}, "spec": [1, {"b": 2.5}]})
        ),
        Just(
            json!({"apiVersion": "hr.example.com/v1", "kind": "Team", "metadata": {"name": "t"}, "spec": "text"})
        ),
        Just(json!({"apiVersion": 5, "kind": ["x"], "metadata": "m"})),
        Just(json!(null)),
        Just(json!([1, 2])),
    ];
    prop::collection::vec(one, 0..5)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    #[test]
    fn mutations_never_panic(
        files in files(),
        pv in packagevariant(),
        cluster in candidates(),
    ) {
        let prr = PrrRef { namespace: "ns", name: "prr" };
        if let Ok(outcome) = apply_mutations(&pv, prr, &files, &cluster) {
            prop_assert_eq!(&outcome.files["README.md"], &files["README.md"]);
            prop_assert_eq!(outcome.changed, !outcome.changed_files.is_empty());
            for point in outcome.results.iter().filter(|p| p.injected) {
                // Nothing from another namespace is ever injected.
                let text = &outcome.files[&point.file];
                prop_assert!(!text.contains("leak"), "{}", text);
            }
        }
    }

    #[test]
    fn kptfile_comparison_never_panics(a in content(KPTFILE), b in content(KPTFILE)) {
        let _ = kptfiles_equal(&a, &b);
        if kptfiles_equal(&a, &b) {
            prop_assert!(kptfiles_equal(&b, &a));
        }
    }
}
