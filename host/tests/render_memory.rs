//! `fn render`'s memory against the package's size, as the CLI runs it:
//! packages of 1 MiB ConfigMaps rendered by a whole process at two sizes,
//! whose peak resident memory (the kernel's `ru_maxrss` of a waited-for
//! child, read through python's `resource`, as the standard library has no
//! `getrusage`) may grow by at most three bytes a byte of package: three
//! times the package plus a constant.
//! The component's memory limit grows with its input, so a package past
//! the old fixed limit (192 MiB of linear memory) renders under the
//! default core.

use std::path::Path;
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_porch-variants")
}

/// A package of `mib` ConfigMaps of 1 MiB each and a set-annotations
/// mutator that changes every one of them.
fn package(dir: &Path, mib: usize) -> u64 {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big\npipeline:\n  mutators:\n  - image: set-annotations:v0.1.5\n    configMap:\n      team: platform\n",
    )
    .unwrap();
    let line = format!("    {}\n", "x".repeat(1019));
    let blob = line.repeat(1024);
    let mut total = 0;
    for i in 0..mib {
        let text = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  blob: |\n{blob}"
        );
        total += text.len() as u64;
        std::fs::write(dir.join(format!("cm-{i}.yaml")), text).unwrap();
    }
    total
}

/// Peak resident memory of `porch-variants fn render [extra] dir`, in
/// bytes, with its exit status.
fn render_peak(dir: &Path, extra: &[&str]) -> (u64, bool, String) {
    let script = "import resource, subprocess, sys\n\
                  r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n\
                  print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
                  print(r.returncode)\n\
                  print(r.stderr)\n";
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(bin())
        .arg("fn")
        .arg("render")
        .args(extra)
        .arg(dir)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let kib: u64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("maxrss");
    let ok = lines.next().map(str::trim) == Some("0");
    (kib * 1024, ok, lines.collect::<Vec<_>>().join("\n"))
}

fn rendered(dir: &Path) {
    let kptfile = std::fs::read_to_string(dir.join("Kptfile")).unwrap();
    assert!(kptfile.contains("reason: RenderSuccess"), "{kptfile}");
    let cm = std::fs::read_to_string(dir.join("cm-0.yaml")).unwrap();
    assert!(cm.contains("team: platform"), "{}", &cm[..200]);
}

#[test]
fn render_memory_grows_by_less_than_three_bytes_a_byte_of_package() {
    let tmp = tempfile::tempdir().unwrap();
    // Both sizes past what the fixed 192 MiB limit let the default core
    // render (it stopped between 30 and 40 MiB).
    const SMALL: usize = 40;
    const LARGE: usize = 80;
    // Each core holds the files and their parsed resources (2 bytes a
    // byte): the component in its linear memory, while the host holds
    // only the batch of changed files it is writing (3 bytes a byte when
    // the host received the whole result).
    for (name, extra, most) in [
        ("component", &[][..], 2.5),
        ("native", &["--native-core"][..], 2.5),
    ] {
        let mut runs = Vec::new();
        for mib in [SMALL, LARGE] {
            let dir = tmp.path().join(format!("{name}-{mib}"));
            let size = package(&dir, mib);
            let (peak, ok, stderr) = render_peak(&dir, extra);
            assert!(ok, "{name}, {mib} MiB: {stderr}");
            rendered(&dir);
            std::fs::remove_dir_all(&dir).unwrap();
            runs.push((size, peak));
        }
        let [(small_size, small_peak), (size, peak)] = runs[..] else {
            unreachable!()
        };
        // The growth between the two sizes: the constant (the binary, the
        // component's code, an instance) cancels out.
        let per_byte = (peak as f64 - small_peak as f64) / (size - small_size) as f64;
        eprintln!(
            "{name}: {} MiB peaks at {} MiB, {} MiB at {} MiB: {per_byte:.2} bytes a byte",
            small_size >> 20,
            small_peak >> 20,
            peak >> 20,
            size >> 20
        );
        assert!(
            per_byte <= most,
            "{name}: {per_byte:.2} bytes of memory a byte of package"
        );
    }
}
