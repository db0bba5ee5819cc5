//! What the golden tests and the benchmark need of kpt, emulated: `kpt fn
//! eval`'s input (`kpt fn source` with the function config), its sink (files
//! from output items), its `results.yaml`, and its e2e runner's `git diff`.
//! Checked against kpt 1.0.0-beta.56 by hand (see functions/README.md).

#![allow(dead_code, missing_docs)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use porch_variants_functions::annotations;
use porch_variants_functions::package::default_path;
use porch_variants_functions::resource_list;
use porch_variants_functions::results;
use pv_core::api::ResultItem;
use pv_core::yaml::{self, string_node, Kind, Node, Style};

/// Workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn quoted(v: &str) -> Node {
    let mut n = Node::new_string(v);
    n.style = Style::SINGLE_QUOTED;
    n
}

fn add_annotations(item: &mut Node, pairs: &[(&str, String)]) {
    let ann = item
        .upsert_map("metadata")
        .and_then(|m| m.upsert_map("annotations"))
        .expect("object");
    for (k, v) in pairs {
        ann.content.push(Node::new_string(*k));
        ann.content.push(quoted(v));
    }
}

/// Whether kpt reads `path` as KRM.
pub fn is_krm(path: &str) -> bool {
    path.ends_with(".yaml") || path.ends_with(".yml") || path.rsplit('/').next() == Some("Kptfile")
}

/// The package's files (slash paths, sorted as kpt walks them), skipping
/// dot files and folders (`.expected`, `.krmignore`, `.git`).
pub fn package_files(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = fs::read_dir(dir).expect("readable").flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = e.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path
                    .strip_prefix(base)
                    .expect("inside")
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, fs::read_to_string(&path).expect("utf-8 file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// `kpt fn eval`'s input ResourceList for a package and function config.
pub fn source(files: &BTreeMap<String, String>, fn_config: Option<&str>) -> String {
    let mut items = Vec::new();
    let mut n = 0usize;
    for (path, text) in files {
        if !is_krm(path) {
            continue;
        }
        for (index, doc) in yaml::parse_stream(text)
            .expect("package files parse")
            .into_iter()
            .enumerate()
        {
            let mut item = doc.content.into_iter().next().expect("document");
            add_annotations(
                &mut item,
                &[
                    ("config.kubernetes.io/index", index.to_string()),
                    ("config.kubernetes.io/path", path.clone()),
                    ("internal.config.kubernetes.io/index", index.to_string()),
                    ("internal.config.kubernetes.io/path", path.clone()),
                    (
                        "internal.config.kubernetes.io/seqindent",
                        "compact".to_string(),
                    ),
                    (
                        "internal.config.kubernetes.io/annotations-migration-resource-id",
                        n.to_string(),
                    ),
                    ("internal.config.kubernetes.io/id", (n + 1).to_string()),
                    ("config.k8s.io/id", (n + 1).to_string()),
                ],
            );
            n += 1;
            items.push(item);
        }
    }
    let config = match fn_config {
        Some(text) => {
            let mut c = yaml::parse_document(text)
                .expect("fn config parses")
                .content
                .remove(0);
            add_annotations(
                &mut c,
                &[
                    ("config.kubernetes.io/index", "0".to_string()),
                    ("internal.config.kubernetes.io/index", "0".to_string()),
                    (
                        "internal.config.kubernetes.io/seqindent",
                        "compact".to_string(),
                    ),
                ],
            );
            c
        }
        None => yaml::parse_document(
            "metadata:\n  name: function-input\ndata: {}\nkind: ConfigMap\napiVersion: v1\n",
        )
        .expect("parses")
        .content
        .remove(0),
    };
    let mut root = Node::new_mapping();
    for (k, v) in [
        ("apiVersion", Node::new_string("config.kubernetes.io/v1")),
        ("kind", Node::new_string("ResourceList")),
    ] {
        root.content.push(Node::new_string(k));
        root.content.push(v);
    }
    let mut seq = Node::new_sequence();
    seq.content = items;
    root.content.push(Node::new_string("items"));
    root.content.push(seq);
    root.content.push(Node::new_string("functionConfig"));
    root.content.push(config);
    yaml::to_string(&Node::new_document(root)).expect("emits")
}

/// The files kpt writes from an output ResourceList (and the results it
/// carries).
pub fn sink(output: &str) -> (BTreeMap<String, String>, Vec<ResultItem>) {
    let doc = resource_list::read(output).expect("output is a ResourceList");
    let mut by_file: BTreeMap<String, Vec<(usize, usize, Node)>> = BTreeMap::new();
    for (pos, item) in doc.items.into_iter().enumerate() {
        let path = annotations::path(&item).map_or_else(|| default_path(&item), str::to_string);
        assert_ne!(
            annotations::get(&item, "internal.config.kubernetes.io/seqindent"),
            Some("wide"),
            "the emulated sink writes compact sequences only"
        );
        let index = annotations::index(&item);
        let mut item = item;
        annotations::strip(&mut item, false);
        by_file.entry(path).or_default().push((index, pos, item));
    }
    let mut files = BTreeMap::new();
    for (path, mut items) in by_file {
        items.sort_by_key(|(i, p, _)| (*i, *p));
        let text = items
            .iter()
            .map(|(_, _, n)| yaml::to_string(n).expect("emits"))
            .collect::<Vec<_>>()
            .join("---\n");
        files.insert(path, text);
    }
    let results = results_of(output);
    (files, results)
}

/// The results of an output ResourceList.
pub fn results_of(output: &str) -> Vec<ResultItem> {
    let doc = yaml::parse_document(output).expect("parses");
    match doc.get_path(&["results"]) {
        Some(r) => serde_json::from_value(yaml::to_json(r).expect("json")).expect("results"),
        None => Vec::new(),
    }
}

/// Writes a YAML mapping the way kpt's results file is written (yaml.v3,
/// indent 2, sequences indented).
fn emit_wide(node: &Node, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    for pair in node.content.chunks_exact(2) {
        let (k, v) = (&pair[0], &pair[1]);
        let key = k.value.as_str();
        let nested = matches!(v.kind, Kind::Mapping | Kind::Sequence) && !v.content.is_empty();
        if !nested {
            let mut m = Node::new_mapping();
            m.content.push(k.clone());
            m.content.push(v.clone());
            for line in yaml::to_string(&m).expect("emits").lines() {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&pad);
                    out.push_str(line);
                    out.push('\n');
                }
            }
            continue;
        }
        out.push_str(&format!("{pad}{key}:\n"));
        if v.kind == Kind::Mapping {
            emit_wide(v, indent + 2, out);
            continue;
        }
        for item in &v.content {
            let mut sub = String::new();
            if item.kind == Kind::Mapping {
                emit_wide(item, indent + 4, &mut sub);
            } else {
                let text = yaml::to_string(item).expect("emits");
                for line in text.lines() {
                    sub.push_str(&" ".repeat(indent + 4));
                    sub.push_str(line);
                    sub.push('\n');
                }
            }
            let first = format!("{}- ", " ".repeat(indent + 2));
            out.push_str(&first);
            out.push_str(&sub[indent + 4..]);
        }
    }
}

/// kpt's `results.yaml` (`FunctionResultList`) for one eval.
pub fn results_file(exec: &str, exit_code: i32, stderr: &str, results: &[ResultItem]) -> String {
    let mut item = Node::new_mapping();
    let push = |m: &mut Node, k: &str, v: Node| {
        m.content.push(Node::new_string(k));
        m.content.push(v);
    };
    push(&mut item, "exec", string_node(exec));
    if !stderr.is_empty() {
        push(&mut item, "stderr", string_node(stderr));
    }
    push(
        &mut item,
        "exitCode",
        Node::new_scalar("!!int", exit_code.to_string()),
    );
    if !results.is_empty() {
        let mut seq = Node::new_sequence();
        seq.content = results.iter().map(results::to_node).collect();
        push(&mut item, "results", seq);
    }
    let mut root = Node::new_mapping();
    push(&mut root, "apiVersion", Node::new_string("kpt.dev/v1"));
    push(&mut root, "kind", Node::new_string("FunctionResultList"));
    let mut meta = Node::new_mapping();
    push(&mut meta, "name", Node::new_string("fnresults"));
    push(&mut root, "metadata", meta);
    push(
        &mut root,
        "exitCode",
        Node::new_scalar("!!int", exit_code.to_string()),
    );
    let mut items = Node::new_sequence();
    items.content.push(item);
    push(&mut root, "items", items);
    let mut out = String::new();
    emit_wide(&root, 0, &mut out);
    out
}

/// Runs a command with `input` on stdin: (exit code, stdout, stderr).
pub fn run(cmd: &mut Command, input: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let text = input.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().expect("runs");
    writer.join().expect("writer").expect("stdin written");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("utf-8 stdout"),
        String::from_utf8(out.stderr).expect("utf-8 stderr"),
    )
}

/// Whether a program runs (`prog --version`).
pub fn have(prog: &str) -> bool {
    Command::new(prog)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The kpt-ABI wasm modules: `PV_KPT_WASM_DIR`, or built now with
/// `scripts/build-kpt-wasm.sh` (cargo makes that a no-op when fresh).
pub fn wasm_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("PV_KPT_WASM_DIR") {
        return PathBuf::from(dir);
    }
    let status = Command::new("bash")
        .arg(root().join("scripts/build-kpt-wasm.sh"))
        .stdout(Stdio::null())
        .status()
        .expect("bash runs");
    assert!(status.success(), "scripts/build-kpt-wasm.sh failed");
    root().join("target/kpt-wasm")
}

/// The node harness that loads a module as kpt's nodejs runtime does.
pub fn harness() -> PathBuf {
    root().join("functions/tests/node/kpt-wasm-harness.js")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=none",
            "-c",
            "user.email=none",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A scratch git repository holding `files`, as kpt's e2e runner prepares
/// a package: returns the directory and the first commit.
pub fn git_package(dir: &Path, files: &BTreeMap<String, String>) -> String {
    if dir.exists() {
        fs::remove_dir_all(dir).expect("clean");
    }
    write_files(dir, files);
    git(dir, &["init", "-q"]);
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "-q", "-m", "first", "--allow-empty"]);
    git(dir, &["log", "-n", "1", "--pretty=format:%h"])
}

/// Replaces the package's files by `files`.
pub fn write_files(dir: &Path, files: &BTreeMap<String, String>) {
    if dir.exists() {
        for old in package_files(dir).keys() {
            if !files.contains_key(old) {
                fs::remove_file(dir.join(old)).expect("remove");
            }
        }
    }
    for (path, text) in files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }
}

/// kpt's e2e runner's diff: commit everything, diff against `first`.
pub fn git_diff(dir: &Path, first: &str) -> String {
    git(dir, &["add", "--all"]);
    git(dir, &["commit", "-q", "-m", "second", "--allow-empty"]);
    git(dir, &["diff", first, "HEAD"]).trim().to_string()
}

/// One Deployment of the generated benchmark package (as the YAML layer's
/// benchmark in core-wasm/benches/yaml.rs).
pub fn bench_resource(i: usize) -> String {
    format!(
        "# Deployment {i} of the generated package.\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: team-{ns}\n  labels:\n    app.kubernetes.io/name: app-{i}\n    app.kubernetes.io/part-of: fleet # kept by every edit\n  annotations:\n    config.kubernetes.io/local-config: \"false\"\n    internal.kpt.dev/upstream-identifier: \"apps|Deployment|default|app-{i}\"\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: app-{i}\n  template:\n    metadata:\n      labels:\n        app: app-{i}\n    spec:\n      containers:\n      # the main container\n      - name: app\n        image: \"registry.example.com/app:v1.{i}\"\n        args: [--port, \"8080\", --verbose]\n        env:\n        - name: MODE\n          value: \"production\"\n        - name: RETRIES\n          value: \"3\"\n      - name: sidecar\n        image: registry.example.com/sidecar:v2\n        command:\n        - /bin/sh\n        - -c\n        - |\n          echo starting sidecar {i}\n          exec sidecar --listen :9090\n",
        ns = i % 17,
        replicas = 1 + i % 5,
    )
}
