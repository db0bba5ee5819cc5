//! The README's command blocks, run as written, so the README cannot
//! drift from the binary.
//!
//! Every ```sh block is read line by line: the comment after `#` is
//! dropped, `a && b` is two commands, and a command that starts with
//! `porch-variants` runs; others (`kubectl`, `scripts/…`, and
//! `porch-variants controller`, which needs a cluster: the kube_* tests
//! drive it against a fake API server) are skipped, as is a pipeline's
//! part after `|`. Each block runs on its own fresh copy of
//! `examples/fleet`, which `local --init` has set up, with the working
//! directory beside it: `DIR` is that copy, `PKG_DIR` a copy of its `web`
//! blueprint, and `[--flag …]` synopsis options are left out. Each command
//! must succeed, and do something (no `nothing to upgrade`).

use porch_variants_tests::copy_dir;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// The ```sh blocks of `text`, each as its lines with their line numbers.
fn sh_blocks(text: &str) -> Vec<Vec<(usize, String)>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<(usize, String)>> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut current, line.trim()) {
            (None, "```sh") => current = Some(Vec::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), _) => block.push((i + 1, line.to_string())),
            _ => {}
        }
    }
    blocks
}

/// A command line's words, without its comment and `[…]` options.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut optional = 0usize;
    for w in command.split_whitespace() {
        if w.starts_with('#') {
            break;
        }
        if w.starts_with('[') {
            optional += 1;
        }
        if optional == 0 {
            out.push(w.to_string());
        }
        if w.ends_with(']') {
            optional = optional.saturating_sub(1);
        }
    }
    out
}

/// The commands of one README line that run here.
fn commands(line: &str) -> Vec<Vec<String>> {
    let code = match line.find(" #") {
        Some(i) => &line[..i],
        None => line,
    };
    code.split("&&")
        .map(|c| c.split('|').next().unwrap_or_default())
        .map(words)
        .filter(|w| w.first().is_some_and(|w| w == "porch-variants"))
        .filter(|w| w.get(1).is_none_or(|w| w != "controller"))
        .collect()
}

fn run(cwd: &Path, args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .current_dir(cwd)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn the_readme_command_blocks_run_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let blocks = sh_blocks(&readme);
    let mut ran = 0;
    for (b, block) in blocks.iter().enumerate() {
        let lines: Vec<(usize, Vec<Vec<String>>)> = block
            .iter()
            .map(|(n, l)| (*n, commands(l)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        if lines.is_empty() {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fleet");
        copy_dir(&repo_root().join("examples/fleet"), &dir);
        let init = run(
            tmp.path(),
            &["local".into(), "--init".into(), "fleet".into()],
        );
        assert!(init.status.success(), "{init:?}");
        let pkg = tmp.path().join("pkg");
        copy_dir(&dir.join("packages/blueprints/web"), &pkg);
        for (n, cmds) in lines {
            for cmd in cmds {
                let args: Vec<String> = cmd[1..]
                    .iter()
                    .map(|w| match w.as_str() {
                        "DIR" => "fleet".to_string(),
                        "PKG_DIR" => "pkg".to_string(),
                        w => w.to_string(),
                    })
                    .collect();
                let out = run(tmp.path(), &args);
                assert!(
                    out.status.success(),
                    "README.md line {n} (block {b}): porch-variants {} exited {:?}\nstdout:\n{}\nstderr:\n{}",
                    args.join(" "),
                    out.status.code(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                // An example that does nothing has drifted too.
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(
                    !stderr.contains("nothing to"),
                    "README.md line {n}: porch-variants {} did nothing: {stderr}",
                    args.join(" ")
                );
                ran += 1;
            }
        }
    }
    // The blocks hold at least the local-mode, rpkg, render, crds and
    // component commands: a README that lost them fails here.
    assert!(ran >= 15, "only {ran} README commands ran");
}

#[test]
fn commands_are_read_as_a_person_reads_the_line() {
    assert_eq!(
        commands("porch-variants local --init DIR     # create DIR/repos/*"),
        vec![vec!["porch-variants", "local", "--init", "DIR"]]
    );
    assert_eq!(
        commands(
            "porch-variants rpkg --dir DIR propose a && porch-variants rpkg --dir DIR approve a"
        ),
        vec![
            vec!["porch-variants", "rpkg", "--dir", "DIR", "propose", "a"],
            vec!["porch-variants", "rpkg", "--dir", "DIR", "approve", "a"]
        ]
    );
    assert_eq!(
        commands("porch-variants fn render PKG_DIR [--results-dir DIR] [--allow-exec]"),
        vec![vec!["porch-variants", "fn", "render", "PKG_DIR"]]
    );
    assert_eq!(
        commands("porch-variants crds | kubectl apply -f -   # the CRDs"),
        vec![vec!["porch-variants", "crds"]]
    );
    assert!(commands("kubectl apply -k deploy/").is_empty());
    assert!(commands("porch-variants controller   # needs a cluster").is_empty());
}
