//! `porch-variants fmt`: kyaml-style formatting of KRM files through the
//! core's YAML layer.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use pv_core::yaml;

/// Formats every KRM file under `paths`; with `check`, only reports.
pub fn run(paths: &[PathBuf], check: bool) -> Result<ExitCode> {
    let mut files = Vec::new();
    for path in paths {
        collect(path, &mut files)?;
    }
    files.sort();
    let mut changed = 0usize;
    let mut failed = 0usize;
    for file in &files {
        let text = match std::fs::read(file) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(_) => {
                    eprintln!("{}: not valid UTF-8", file.display());
                    failed += 1;
                    continue;
                }
            },
            Err(err) => {
                eprintln!("{}: {err}", file.display());
                failed += 1;
                continue;
            }
        };
        let formatted = match yaml::reformat(&text) {
            Ok(out) => out,
            Err(err) => {
                eprintln!("{}: {err}", file.display());
                failed += 1;
                continue;
            }
        };
        if formatted == text {
            continue;
        }
        changed += 1;
        if check {
            porch_variants::outln!("would reformat {}", file.display());
        } else {
            write_atomically(file, &formatted)?;
            porch_variants::outln!("reformatted {}", file.display());
        }
    }
    tracing::info!(files = files.len(), changed, failed, "fmt done");
    porch_variants::outln!(
        "{} file(s) checked, {changed} {}, {failed} failed",
        files.len(),
        if check { "would change" } else { "changed" }
    );
    Ok(if failed > 0 || (check && changed > 0) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Adds `path` (a file) or the KRM files under it (a directory) to `out`;
/// an error names the file or directory it happened on.
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let entries = std::fs::read_dir(path).with_context(|| format!("listing {}", path.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", path.display()))?;
        let p = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let file_type = entry
            .file_type()
            .with_context(|| format!("reading {}", p.display()))?;
        if file_type.is_dir() {
            collect(&p, out)?;
        } else if name == "Kptfile" || name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(p);
        }
    }
    Ok(())
}

/// Writes through a temporary file and a rename, so a failure never leaves
/// a half-written file behind.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("porch-variants.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_collected_and_errors_name_the_path() {
        let dir = tempfile::tempdir().expect("temporary directory");
        let sub = dir.path().join("pkg/sub");
        std::fs::create_dir_all(&sub).expect("creates");
        for name in [
            "pkg/Kptfile",
            "pkg/sub/a.yaml",
            "pkg/sub/b.yml",
            "pkg/notes.txt",
        ] {
            std::fs::write(dir.path().join(name), "a: b\n").expect("writes");
        }
        std::fs::create_dir_all(dir.path().join("pkg/.git")).expect("creates");
        std::fs::write(dir.path().join("pkg/.git/c.yaml"), "a: b\n").expect("writes");
        let mut files = Vec::new();
        collect(&dir.path().join("pkg"), &mut files).expect("collects");
        files.sort();
        let names: Vec<String> = files
            .iter()
            .map(|f| {
                f.strip_prefix(dir.path())
                    .unwrap_or(f)
                    .display()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["pkg/Kptfile", "pkg/sub/a.yaml", "pkg/sub/b.yml"]);

        let missing = dir.path().join("pkg/missing");
        let e = collect(&missing, &mut files).expect_err("missing");
        assert!(
            format!("{e:#}").contains(&missing.display().to_string()),
            "{e:#}"
        );
    }
}
