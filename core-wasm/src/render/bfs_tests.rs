//! `kpt.dev/bfs-rendering`: the root's pipeline sees its subpackages'
//! resources, and what it leaves is put back in each package's files.

use super::{render, BuiltinsOnly, Files, RenderOptions};

const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: db\nspec:\n  port: 5432\n";

fn package(annotations: &str, mutators: &str) -> Files {
    let mut files = Files::new();
    files.insert(
        "Kptfile".into(),
        format!(
            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n{annotations}pipeline:\n  mutators:\n{mutators}"
        ),
    );
    files.insert(
        "sub/Kptfile".into(),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\n".into(),
    );
    files.insert("sub/service.yaml".into(), SERVICE.into());
    files
}

fn documents(text: &str) -> usize {
    crate::yaml::parse_stream(text).expect("YAML").len()
}

#[test]
fn save_on_render_failure_writes_each_subpackage_file_once() {
    let files = package(
        "    kpt.dev/bfs-rendering: \"true\"\n    kpt.dev/save-on-render-failure: \"true\"\n",
        "  - image: set-labels:v0.2\n    configMap:\n      tier: db\n  - image: example.com/not-a-function:v1\n",
    );
    let out = render(&files, &RenderOptions::default(), &mut BuiltinsOnly);
    assert!(out.failure.is_some(), "the second function fails");
    for path in ["sub/service.yaml", "sub/Kptfile"] {
        let text = &out.files[path];
        assert_eq!(documents(text), 1, "{path}:\n{text}");
    }
    // What the step before the failure did is what is saved.
    let service = &out.files["sub/service.yaml"];
    assert!(service.contains("tier: db"), "{service}");
    assert!(
        out.summary.starts_with("Partially executed 1 function(s)"),
        "{}",
        out.summary
    );
}

#[test]
fn a_successful_bfs_render_puts_each_resource_back_in_its_package() {
    let files = package(
        "    kpt.dev/bfs-rendering: \"true\"\n",
        "  - image: set-labels:v0.2\n    configMap:\n      tier: db\n",
    );
    let out = render(&files, &RenderOptions::default(), &mut BuiltinsOnly);
    assert!(out.failure.is_none(), "{:?}", out.failure);
    assert_eq!(documents(&out.files["sub/service.yaml"]), 1);
    assert!(out.files["sub/service.yaml"].contains("tier: db"));
    assert!(!out.files["Kptfile"].contains("kind: Service"));
}
