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
        collect(path, &mut files).with_context(|| format!("reading {}", path.display()))?;
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
            println!("would reformat {}", file.display());
        } else {
            write_atomically(file, &formatted)?;
            println!("reformatted {}", file.display());
        }
    }
    tracing::info!(files = files.len(), changed, failed, "fmt done");
    println!(
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

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let p = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        if entry.file_type()?.is_dir() {
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
