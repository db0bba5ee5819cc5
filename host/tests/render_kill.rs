//! SIGKILL at points spread over `fn render` of a 5,000-file package: each
//! point leaves the old package or the new one (beside them, only new
//! files not yet in place under a journal that says `writing`, which the
//! next render removes; a mix of old and new only under a journal that
//! says `switching`, which the next render finishes), the root Kptfile
//! says `Rendered=True` only beside the new package, and a second render
//! makes the resources an uninterrupted one makes (its Kptfile may record
//! other results: its functions may find nothing left to change), after
//! which a third changes no resource. The packages are made
//! on tmpfs where there is one (`/dev/shm`), for the campaign's speed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FILES: usize = 5_000;
const POINTS: usize = 20;
const JOURNAL: &str = ".porch-variants-write";

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_porch-variants")
}

/// The package: a Kptfile setting every resource's namespace, and
/// `FILES` ConfigMaps in 10 directories.
fn package(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("Kptfile"),
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big\npipeline:\n  mutators:\n  - image: set-namespace:v0.4\n    configMap:\n      namespace: prod\n",
    )
    .unwrap();
    for i in 0..FILES {
        let sub = dir.join(format!("d{}", i / 500));
        if i % 500 == 0 {
            std::fs::create_dir_all(&sub).unwrap();
        }
        std::fs::write(
            sub.join(format!("cm{i}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\ndata:\n  k: v\n"),
        )
        .unwrap();
    }
}

/// Every file under `dir` with its text.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(e.path()).unwrap());
            }
        }
    }
    out
}

fn render(dir: &Path) -> Duration {
    let started = Instant::now();
    let out = Command::new(bin())
        .args(["fn", "render"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// Renders `dir` and SIGKILLs the render after `after`; whether it was
/// killed.
fn render_killed(dir: &Path, after: Duration) -> bool {
    let mut child = Command::new(bin())
        .args(["fn", "render"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if started.elapsed() >= after {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

fn rendered_true(kptfile: &str) -> bool {
    kptfile.contains("type: Rendered\n      status: \"True\"")
}

#[test]
fn a_killed_render_leaves_the_old_package_or_the_new_one() {
    let shm = Path::new("/dev/shm");
    let tmp = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let old_dir = tmp.path().join("old");
    package(&old_dir);
    let old = files(&old_dir);
    // The new package, from an uninterrupted render (timed: the kill
    // points are spread over it, half of them over its last 30%, where the
    // write-back is, and past it).
    let new_dir = tmp.path().join("new");
    package(&new_dir);
    let took = render(&new_dir);
    let new = files(&new_dir);
    assert!(rendered_true(&new["Kptfile"]), "{}", new["Kptfile"]);
    assert_ne!(old["d0/cm0.yaml"], new["d0/cm0.yaml"]);
    let mut states = BTreeMap::<&str, usize>::new();
    for point in 0..POINTS {
        let fraction = if point % 2 == 0 {
            1.1 * (point + 1) as f64 / (POINTS + 1) as f64
        } else {
            0.7 + 0.35 * (point as f64 / POINTS as f64)
        };
        let at = took.mul_f64(fraction);
        let dir: PathBuf = tmp.path().join(format!("kill-{point}"));
        package(&dir);
        let killed = render_killed(&dir, at);
        let now = files(&dir);
        let journal = now.get(JOURNAL).cloned();
        // The package as a reader sees it: no journal, no new file that is
        // not in place yet.
        let visible: BTreeMap<String, String> = now
            .iter()
            .filter(|(p, _)| *p != JOURNAL && !p.ends_with(".pv-new"))
            .map(|(p, t)| (p.clone(), t.clone()))
            .collect();
        let is_new = |p: &String| visible.get(p) == Some(&new[p]);
        let label = format!("kill {point} at {at:?} (killed: {killed})");
        if rendered_true(&visible["Kptfile"]) {
            assert!(
                new.keys().all(is_new),
                "{label}: the Kptfile says Rendered=True beside old files"
            );
        }
        let state = match (visible == old, visible == new, &journal) {
            (true, _, None) => "old",
            (_, true, None) => "new",
            (true, _, Some(j)) if j.contains("\"writing\"") => "old, new files beside",
            (_, _, Some(j)) if j.contains("\"switching\"") => "switching",
            _ => panic!("{label}: neither the old package nor the new one (journal: {journal:?})"),
        };
        if journal.is_none() {
            assert_eq!(now, visible, "{label}: new files left with no journal");
        }
        *states.entry(state).or_default() += 1;
        // The next render finishes or undoes the write, then renders: the
        // resources an uninterrupted render makes; and then a fixed point.
        render(&dir);
        let second = files(&dir);
        let differ: Vec<&String> = new
            .keys()
            .filter(|p| *p != "Kptfile" && second.get(*p) != new.get(*p))
            .collect();
        assert!(
            differ.is_empty(),
            "{label}: second render differs in {} files, first {:?}",
            differ.len(),
            differ.first()
        );
        assert_eq!(
            second.len(),
            new.len(),
            "{label}: files left beside the package"
        );
        assert!(
            rendered_true(&second["Kptfile"]),
            "{label}: {}",
            second["Kptfile"]
        );
        render(&dir);
        let third = files(&dir);
        assert!(
            third.len() == second.len()
                && third
                    .iter()
                    .all(|(p, t)| p == "Kptfile" || second.get(p) == Some(t)),
            "{label}: a third render changed a resource"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
    println!("kill points by what they left: {states:?}");
    assert!(states.values().sum::<usize>() >= 20);
}
