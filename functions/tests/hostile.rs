//! The hostile-input catalogue, run through both kpt functions as the
//! binaries run them (`main_with`: bytes in, ResourceList out, exit code):
//! each input gets an error result that names what was wrong, no panic and
//! no runaway, and the same process then serves a normal input.
//!
//! The component's own limits (fuel, memory, time) on the same kinds of
//! input are shown by `host/tests/hostile.rs`; the catalogue with every
//! entry and where it is tested is `docs/hostile-input.md`.

use std::time::{Duration, Instant};

use porch_variants_functions::{main_with, Function};

/// No hostile input may keep a function busy longer than this (debug build).
const DEADLINE: Duration = Duration::from_secs(20);

/// A PackageVariantSet over two repositories with `template` as the
/// template of its target, and the cluster objects it needs.
fn render_input(template: &str, extra_items: &str) -> String {
    format!(
        r#"apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig:
  apiVersion: config.porch.kpt.dev/v1alpha2
  kind: PackageVariantSet
  metadata:
    name: fleet
    namespace: porch
    uid: 7d3c1f0e-0000-4000-8000-000000000001
  spec:
    upstream:
      repo: blueprints
      package: app
      revision: 1
    targets:
    - repositorySelector:
        matchLabels:
          env: prod
{template}
items:
- apiVersion: porch.kpt.dev/v1alpha1
  kind: PackageRevision
  metadata:
    name: blueprints.app.v1
    namespace: porch
    annotations:
      porch-variants/cluster-object: "true"
  spec:
    packageName: app
    repository: blueprints
    workspaceName: v1
    revision: 1
    lifecycle: Published
- apiVersion: config.porch.kpt.dev/v1alpha1
  kind: Repository
  metadata:
    name: edge-east
    namespace: porch
    labels:
      env: prod
    annotations:
      porch-variants/cluster-object: "true"
  spec:
    type: git
- apiVersion: config.porch.kpt.dev/v1alpha1
  kind: Repository
  metadata:
    name: edge-west
    namespace: porch
    labels:
      env: prod
    annotations:
      porch-variants/cluster-object: "true"
  spec:
    type: git
{extra_items}"#
    )
}

/// A PackageVariant with package context and injection, over a package
/// whose deployment carries `deployment_extra` and with `items` appended.
fn apply_input(package_variant_extra: &str, items: &str) -> String {
    format!(
        r#"apiVersion: config.kubernetes.io/v1
kind: ResourceList
functionConfig:
  apiVersion: config.porch.kpt.dev/v1alpha1
  kind: PackageVariant
  metadata:
    name: app-east
    namespace: porch
    uid: 7d3c1f0e-0000-4000-8000-000000000002
  spec:
    upstream:
      repo: blueprints
      package: app
      revision: 1
    downstream:
      repo: edge-east
      package: app
{package_variant_extra}
items:
- apiVersion: kpt.dev/v1
  kind: Kptfile
  metadata:
    name: app
    annotations:
      config.kubernetes.io/path: Kptfile
      config.kubernetes.io/index: "0"
  info:
    description: app
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: kptfile.kpt.dev
    annotations:
      config.kubernetes.io/path: package-context.yaml
      config.kubernetes.io/index: "0"
  data:
    name: app
{items}"#
    )
}

/// What one run produced.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn run(function: Function, input: &[u8]) -> Run {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let started = Instant::now();
    let code = main_with(function, &mut &input[..], &mut stdout, &mut stderr);
    Run {
        code,
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(stderr).expect("stderr is UTF-8"),
        elapsed: started.elapsed(),
    }
}

/// What an entry of the catalogue must give.
enum Expect {
    /// Exit 1 with an error result containing every one of these.
    Error(&'static [&'static str]),
    /// Exit 0, and the output ResourceList passes this check (`Err`: why
    /// not).
    Ok(fn(&str) -> Result<(), String>),
}

/// One entry of the catalogue.
struct Case {
    name: &'static str,
    function: Function,
    input: Vec<u8>,
    expect: Expect,
}

/// The `metadata.name`s of the PackageVariants of an output ResourceList.
fn package_variant_names(output: &str) -> Vec<String> {
    let docs = pv_core::yaml::parse_stream(output).expect("output parses");
    let json = pv_core::yaml::to_json(&docs[0]).expect("output converts");
    json["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["kind"] == "PackageVariant")
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn nested_maps(depth: usize) -> String {
    let mut s = String::new();
    for i in 0..depth {
        s.push_str(&" ".repeat(2 * i + 4));
        s.push_str("a:\n");
    }
    s.push_str(&" ".repeat(2 * depth + 4));
    s.push_str("b: c\n");
    s
}

fn alias_bomb() -> String {
    let mut s = String::from("    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let prev = format!("*l{}", i - 1);
        let row = [prev.as_str(); 10].join(", ");
        s.push_str(&format!("    l{i}: &l{i} [{row}]\n"));
    }
    s
}

fn catalogue() -> Vec<Case> {
    let big = "x".repeat(100 << 20);
    vec![
        Case {
            name: "billion laughs in the function config",
            function: Function::RenderPackageVariantSet,
            input: render_input(
                &format!("      template:\n        labels:\n{}", alias_bomb().replace("    ", "          ")),
                "",
            )
            .into_bytes(),
            expect: Expect::Error(&["aliases"]),
        },
        Case {
            name: "billion laughs in a package item",
            function: Function::ApplyPackageVariant,
            input: apply_input(
                "",
                &format!(
                    "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: bomb\n    annotations:\n      config.kubernetes.io/path: bomb.yaml\n  data:\n{}",
                    alias_bomb()
                ),
            )
            .into_bytes(),
            // Not an object the function reads: passed through as written,
            // never expanded.
            expect: Expect::Ok(|out| {
                if out.contains("l9: &l9 [*l8, *l8") && out.len() < 100_000 {
                    Ok(())
                } else {
                    Err("the anchors and aliases are not kept as written".into())
                }
            }),
        },
        Case {
            name: "100 MB ResourceList",
            function: Function::ApplyPackageVariant,
            input: apply_input(
                "",
                &format!(
                    "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: big\n    annotations:\n      config.kubernetes.io/path: big.yaml\n  data:\n    big: {big}\n  broken: [\n"
                ),
            )
            .into_bytes(),
            expect: Expect::Error(&["did not find expected", "line "]),
        },
        Case {
            name: "maps nested 10,000 deep",
            function: Function::ApplyPackageVariant,
            input: apply_input(
                "",
                &format!(
                    "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: deep\n  data:\n{}",
                    nested_maps(10_000)
                ),
            )
            .into_bytes(),
            expect: Expect::Error(&["exceeded max depth"]),
        },
        Case {
            name: "not UTF-8",
            function: Function::ApplyPackageVariant,
            input: {
                let mut bytes = apply_input("", "").into_bytes();
                bytes.extend_from_slice(b"- kind: \xff\xfe\n");
                bytes
            },
            expect: Expect::Error(&["not UTF-8"]),
        },
        Case {
            name: "duplicate keys",
            function: Function::RenderPackageVariantSet,
            input: render_input("", "").replacen(
                "    name: fleet\n",
                "    name: fleet\n    name: other\n",
                1,
            )
            .into_bytes(),
            expect: Expect::Error(&["already defined"]),
        },
        Case {
            name: "CEL that allocates without bound",
            function: Function::RenderPackageVariantSet,
            input: render_input(
                &format!(
                    "      template:\n        downstream:\n          packageExpr: \"{}\"\n",
                    (0..6).fold(format!("'{}'", "x".repeat(200)), |e, _| format!(
                        "[1,2,3,4,5,6,7,8,9,10].map(i, {e})"
                    )) + ".size() > 0 ? 'x' : 'y'"
                ),
                "",
            )
            .into_bytes(),
            expect: Expect::Error(&["spec.targets[0].template.downstream.packageExpr", "too expensive"]),
        },
        Case {
            name: "CEL that loops (comprehension over a huge list)",
            function: Function::RenderPackageVariantSet,
            input: render_input(
                "      template:\n        downstream:\n          packageExpr: \"[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, [1,2,3,4,5,6,7,8,9,10].map(e, [1,2,3,4,5,6,7,8,9,10].map(f, a)))))).size() > 0 ? 'x' : 'y'\"\n",
                "",
            )
            .into_bytes(),
            expect: Expect::Error(&["spec.targets[0].template.downstream.packageExpr", "too expensive"]),
        },
        Case {
            name: "CEL asking for a target's spec",
            function: Function::RenderPackageVariantSet,
            input: render_input(
                "      template:\n        downstream:\n          packageExpr: \"repository.spec.type\"\n",
                "",
            )
            .into_bytes(),
            expect: Expect::Error(&["packageExpr", "no such key: spec"]),
        },
        Case {
            name: "a generated name over 63 characters",
            function: Function::RenderPackageVariantSet,
            input: render_input(
                &format!(
                    "      template:\n        downstream:\n          packageExpr: \"'{}'\"\n",
                    "p".repeat(70)
                ),
                "",
            )
            .into_bytes(),
            // Names over 63 characters are shortened with a hash, as
            // upstream does; every name stays a valid object name.
            expect: Expect::Ok(|out| {
                let names = package_variant_names(out);
                if names.len() == 2 && names.iter().all(|n| n.len() <= 63) {
                    Ok(())
                } else {
                    Err(format!("names {names:?}"))
                }
            }),
        },
        Case {
            name: "a PackageVariantSet name at the 63-character limit",
            function: Function::RenderPackageVariantSet,
            input: render_input("", "")
                .replacen("    name: fleet\n", &format!("    name: {}\n", "f".repeat(63)), 1)
                .into_bytes(),
            expect: Expect::Ok(|out| {
                let names = package_variant_names(out);
                if names.len() == 2 && names.iter().all(|n| n.len() <= 63) {
                    Ok(())
                } else {
                    Err(format!("names {names:?}"))
                }
            }),
        },
    ]
}

#[test]
fn every_hostile_input_gets_a_clear_error_and_the_process_keeps_serving() {
    let normal_render = render_input("", "");
    let normal_apply = apply_input("", "");
    let mut failures = Vec::new();
    for case in catalogue() {
        if std::env::var("HOSTILE_CASE").is_ok_and(|c| !case.name.contains(c.as_str())) {
            continue;
        }
        let r = run(case.function, &case.input);
        let problem = if !r.stdout.contains("kind: ResourceList") {
            Some("no ResourceList written".to_string())
        } else if r.elapsed > DEADLINE {
            Some(format!("took {:?}", r.elapsed))
        } else {
            match &case.expect {
                Expect::Error(_) if r.code != 1 => {
                    Some(format!("exit code {} (stderr: {})", r.code, r.stderr))
                }
                Expect::Error(parts) => parts
                    .iter()
                    .find(|e| !r.stderr.contains(**e))
                    .map(|missing| format!("error lacks {missing:?}: {}", r.stderr)),
                Expect::Ok(_) if r.code != 0 => {
                    Some(format!("exit code {} (stderr: {})", r.code, r.stderr))
                }
                Expect::Ok(check) => check(&r.stdout).err(),
            }
        };
        println!(
            "{:<50} {:>8.1} ms  {}",
            case.name,
            r.elapsed.as_secs_f64() * 1e3,
            r.stderr.lines().next().unwrap_or("")
        );
        if let Some(p) = problem {
            failures.push(format!("{}: {p}", case.name));
        }
        // The same process serves normal input afterwards.
        for (f, input) in [
            (Function::RenderPackageVariantSet, &normal_render),
            (Function::ApplyPackageVariant, &normal_apply),
        ] {
            let ok = run(f, input.as_bytes());
            if ok.code != 0 {
                failures.push(format!(
                    "after {}: a normal input failed: {}",
                    case.name, ok.stderr
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn objects_of_other_namespaces_are_ignored() {
    // An injection source in another namespace is not injected; a
    // Repository of another namespace is not a target.
    let apply = apply_input(
        "    injectors:\n    - name: east-db\n",
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: db\n    annotations:\n      config.kubernetes.io/path: db.yaml\n      kpt.dev/config-injection: required\n  data:\n    host: placeholder\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: east-db\n    namespace: attacker\n    annotations:\n      porch-variants/cluster-object: \"true\"\n  data:\n    host: evil.example.com\n",
    );
    let r = run(Function::ApplyPackageVariant, apply.as_bytes());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("evil.example.com"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("no in-cluster object for required injection point ConfigMap/db"),
        "the point is reported as not injected: {}",
        r.stdout
    );

    let render = render_input(
        "",
        "- apiVersion: config.porch.kpt.dev/v1alpha1\n  kind: Repository\n  metadata:\n    name: edge-intruder\n    namespace: attacker\n    labels:\n      env: prod\n    annotations:\n      porch-variants/cluster-object: \"true\"\n  spec:\n    type: git\n",
    );
    let r = run(Function::RenderPackageVariantSet, render.as_bytes());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("edge-east"), "{}", r.stdout);
    assert!(!r.stdout.contains("edge-intruder"), "{}", r.stdout);
}
