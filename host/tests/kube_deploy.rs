//! The manifests under `deploy/` parse and agree with the code: the
//! kustomization lists every manifest and the generated CRDs, the
//! Deployment's service account and namespace are the ones bound by the
//! RBAC, its arguments are accepted by `porch-variants controller`, its
//! probes hit the health endpoints on the port it listens on, the Lease
//! the RBAC allows is the one the controller uses, and no rule uses a
//! wildcard.

use std::path::{Path, PathBuf};

use clap::Parser;
use porch_variants::crd;
use porch_variants::kube::run::ControllerArgs;
use porch_variants::kube::FIELD_MANAGER;
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn objects(path: &Path) -> Vec<Value> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    pv_core::yaml::parse_stream(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
        .iter()
        .map(|d| pv_core::yaml::to_json(d).expect("yaml to json"))
        .filter(|v| v.get("kind").is_some())
        .collect()
}

fn all_objects() -> Vec<Value> {
    let kustomization = objects(&deploy_dir().join("kustomization.yaml"));
    let resources = kustomization[0]["resources"]
        .as_array()
        .expect("resources")
        .clone();
    resources
        .iter()
        .flat_map(|r| objects(&deploy_dir().join(r.as_str().expect("resource path"))))
        .collect()
}

fn find<'a>(objs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objs.iter().filter(|o| o["kind"] == kind).collect()
}

#[derive(Debug, Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    Controller(ControllerArgs),
}

fn controller_args(objs: &[Value]) -> (Value, ControllerArgs) {
    let deployment = find(objs, "Deployment")[0].clone();
    let container = deployment["spec"]["template"]["spec"]["containers"][0].clone();
    let mut argv = vec!["porch-variants".to_string()];
    argv.extend(
        container["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("string arg").to_string()),
    );
    let Command::Controller(args) = Cli::try_parse_from(&argv)
        .unwrap_or_else(|e| panic!("container args {argv:?} rejected: {e}"))
        .command;
    (deployment, args)
}

#[test]
fn kustomization_lists_the_generated_crds() {
    let objs = all_objects();
    let mut names: Vec<String> = find(&objs, "CustomResourceDefinition")
        .iter()
        .map(|c| {
            c["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![crd::PACKAGE_VARIANT_CRD, crd::PACKAGE_VARIANT_SET_CRD]
    );
    for (file, generated) in crd::all() {
        let committed = objects(&deploy_dir().join("crds").join(file));
        assert_eq!(committed, vec![generated], "{file}");
    }
}

#[test]
fn deployment_service_account_namespace_and_bindings_agree() {
    let objs = all_objects();
    let (deployment, _) = controller_args(&objs);
    let ns = deployment["metadata"]["namespace"]
        .as_str()
        .expect("namespace");
    let sa = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .expect("serviceAccountName");
    assert_eq!(find(&objs, "Namespace")[0]["metadata"]["name"], ns);
    let account = find(&objs, "ServiceAccount")[0];
    assert_eq!(account["metadata"]["name"], sa);
    assert_eq!(account["metadata"]["namespace"], ns);
    let bindings: Vec<&Value> = objs
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding" || o["kind"] == "RoleBinding")
        .collect();
    assert_eq!(bindings.len(), 2);
    for b in bindings {
        assert_eq!(b["subjects"][0]["name"], sa, "{b}");
        assert_eq!(b["subjects"][0]["namespace"], ns, "{b}");
        let role = b["roleRef"]["name"].as_str().expect("roleRef");
        assert!(
            objs.iter()
                .any(|o| o["metadata"]["name"] == role && o["kind"] == b["roleRef"]["kind"]),
            "{role} missing"
        );
    }
}

#[test]
fn container_args_probes_and_lease_match_the_code() {
    let objs = all_objects();
    let (deployment, args) = controller_args(&objs);
    assert_eq!(
        args.reconcilers,
        vec!["packagevariants", "packagevariantsets"]
    );
    assert_eq!(args.lease_name, FIELD_MANAGER);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["ports"][0]["containerPort"],
        Value::from(args.listen.port())
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let env: Vec<&str> = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(env.contains(&"POD_NAME") && env.contains(&"POD_NAMESPACE"));
    let security = &deployment["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
    // The Lease the Role lets it update is the one it uses.
    let role = find(&objs, "Role")[0];
    let lease_rule = role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .find(|r| r["resourceNames"].is_array())
        .expect("a rule on the named lease");
    assert_eq!(lease_rule["resourceNames"][0], args.lease_name.as_str());
    assert_eq!(lease_rule["resources"][0], "leases");
}

/// (That the rules cover every request the controller makes is checked on
/// the requests themselves: `kube_controller.rs` and `kube_run.rs` match
/// each recorded request against `deploy/rbac.yaml`.)
#[test]
fn rbac_has_no_wildcards_and_covers_what_the_controller_calls() {
    let objs = all_objects();
    let role = find(&objs, "ClusterRole")[0];
    let rules = role["rules"].as_array().expect("rules");
    let mut granted = Vec::new();
    for r in rules {
        for key in ["apiGroups", "resources", "verbs"] {
            assert!(
                !r[key].as_array().expect(key).iter().any(|v| v == "*"),
                "wildcard in {r}"
            );
        }
        for res in r["resources"].as_array().expect("resources") {
            for verb in r["verbs"].as_array().expect("verbs") {
                granted.push(format!(
                    "{}/{}",
                    res.as_str().unwrap_or_default(),
                    verb.as_str().unwrap_or_default()
                ));
            }
        }
    }
    for needed in [
        "repositories/watch",
        "packagevariants/update",
        "packagevariants/status/patch",
        "packagevariants/finalizers/update",
        "packagevariantsets/status/patch",
        "packagerevisions/create",
        "packagerevisions/delete",
        "packagerevisions/watch",
        "packagerevisionresources/get",
        "packagerevisionresources/update",
        "configmaps/watch",
    ] {
        assert!(granted.iter().any(|g| g == needed), "{needed} not granted");
    }
    assert!(!granted.iter().any(|g| g == "packagerevisionresources/list"));
}

#[test]
fn containerfile_is_multi_stage_and_non_root() {
    let text = std::fs::read_to_string(deploy_dir().join("Containerfile")).expect("Containerfile");
    assert_eq!(text.lines().filter(|l| l.starts_with("FROM ")).count(), 2);
    assert!(text.contains("distroless"));
    assert!(text.lines().any(|l| l.trim() == "USER 65532:65532"));
    assert!(text.contains("--locked"));
}

/// `deploy/packagerevisions/`: the base plus every reconciler. Its patch
/// names the base's Deployment and container, its arguments are accepted
/// and run all four reconcilers, and the Git root they name is a writable
/// volume (the root filesystem is read-only), beside the code cache.
#[test]
fn packagerevisions_overlay_runs_every_reconciler_on_a_writable_git_root() {
    let dir = deploy_dir().join("packagerevisions");
    let kustomization = &objects(&dir.join("kustomization.yaml"))[0];
    assert_eq!(kustomization["resources"], serde_json::json!(["../"]));
    let patch_file = kustomization["patches"][0]["path"]
        .as_str()
        .expect("a patch file");
    let patch = objects(&dir.join(patch_file));
    let base = all_objects();
    let (deployment, _) = controller_args(&base);
    assert_eq!(patch[0]["kind"], "Deployment");
    for key in ["name", "namespace"] {
        assert_eq!(patch[0]["metadata"][key], deployment["metadata"][key]);
    }
    let container = &patch[0]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        container["name"],
        deployment["spec"]["template"]["spec"]["containers"][0]["name"]
    );
    let (_, args) = controller_args(&patch);
    for r in [
        "packagevariants",
        "packagevariantsets",
        "packagerevisions",
        "repositories",
    ] {
        assert!(args.reconcilers.iter().any(|a| a == r), "{r} not run");
    }
    assert!(args.repositories.create_v1alpha2_rpkg);
    let mounts = container["volumeMounts"].as_array().expect("volumeMounts");
    let git = mounts
        .iter()
        .find(|m| m["mountPath"] == args.packagerevisions.git_root.to_str().unwrap())
        .expect("the Git root is mounted");
    assert_ne!(git["readOnly"], true);
    let volumes = patch[0]["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes");
    for m in mounts {
        assert!(
            volumes.iter().any(|v| v["name"] == m["name"]),
            "volume {} is mounted but not declared",
            m["name"]
        );
    }
    // The base's mounts are kept (a strategic merge keys them by path, but
    // the patch lists them all so that it reads whole).
    for m in deployment["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .expect("base volumeMounts")
    {
        assert!(mounts.contains(m), "base mount {m} dropped");
    }
}

/// `deploy/v1alpha2/`: the packagerevisions overlay with one more argument,
/// `--porch-api=v1alpha2`, that the controller accepts.
#[test]
fn v1alpha2_overlay_adds_the_porch_api_to_every_reconciler() {
    let dir = deploy_dir().join("v1alpha2");
    let kustomization = &objects(&dir.join("kustomization.yaml"))[0];
    assert_eq!(
        kustomization["resources"],
        serde_json::json!(["../packagerevisions"])
    );
    let patch = &kustomization["patches"][0];
    assert_eq!(patch["target"]["kind"], "Deployment");
    let ops = pv_core::yaml::parse_stream(patch["patch"].as_str().expect("inline patch"))
        .expect("the patch parses");
    let ops = pv_core::yaml::to_json(&ops[0]).expect("json");
    assert_eq!(
        ops,
        serde_json::json!([{"op": "add", "path": "/spec/template/spec/containers/0/args/-",
                            "value": "--porch-api=v1alpha2"}])
    );
    let base = objects(&deploy_dir().join("packagerevisions/controllers.yaml"));
    let mut with = base.clone();
    with[0]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array_mut()
        .expect("args")
        .push(ops[0]["value"].clone());
    let (_, args) = controller_args(&with);
    assert_eq!(
        args.porch_api,
        porch_variants::store::v1alpha2::PorchApi::V1alpha2
    );
    assert_eq!(args.reconcilers.len(), 4);
}

/// `deploy/sharded/`: every reconciler, three replicas, `--shards=32`,
/// and a Role over the namespace's Leases bound to the controller's
/// service account, granting exactly what the shard rounds call.
#[test]
fn sharded_overlay_runs_three_replicas_on_shard_leases() {
    let dir = deploy_dir().join("sharded");
    let kustomization = &objects(&dir.join("kustomization.yaml"))[0];
    assert_eq!(
        kustomization["resources"],
        serde_json::json!(["../packagerevisions", "rbac.yaml"])
    );
    let patch = &kustomization["patches"][0];
    assert_eq!(patch["target"]["kind"], "Deployment");
    let ops = pv_core::yaml::parse_stream(patch["patch"].as_str().expect("inline patch"))
        .expect("the patch parses");
    let ops = pv_core::yaml::to_json(&ops[0]).expect("json");
    let mut with = objects(&deploy_dir().join("packagerevisions/controllers.yaml"));
    for op in ops.as_array().expect("ops") {
        match op["path"].as_str() {
            Some("/spec/replicas") => with[0]["spec"]["replicas"] = op["value"].clone(),
            Some("/spec/template/spec/containers/0/args/-") => with[0]["spec"]["template"]["spec"]
                ["containers"][0]["args"]
                .as_array_mut()
                .expect("args")
                .push(op["value"].clone()),
            other => panic!("unexpected patch path {other:?}"),
        }
    }
    let (deployment, args) = controller_args(&with);
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(args.shards, 32);
    assert_eq!(args.reconcilers.len(), 4);
    let rbac = objects(&dir.join("rbac.yaml"));
    let role = find(&rbac, "Role")[0];
    let binding = find(&rbac, "RoleBinding")[0];
    let base = all_objects();
    let account = find(&base, "ServiceAccount")[0];
    assert_eq!(
        role["metadata"]["namespace"],
        account["metadata"]["namespace"]
    );
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(binding["subjects"][0]["name"], account["metadata"]["name"]);
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                            "verbs": ["get", "list", "create", "update"]}])
    );
}
