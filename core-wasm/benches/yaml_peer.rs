//! The YAML layer against its peer, the code kpt and Porch run: Go's
//! `gopkg.in/yaml.v3` decoding into `yaml.Node` trees and kyaml's encoder
//! settings writing them back (`tools/kyaml-oracle`, its `-bench` mode), on
//! the same generated 1,000-resource package, in one run.
//!
//! Rounds alternate between the two: ours times `ITERATIONS` round trips
//! (`yaml::reformat`) in this process, then the oracle process times as
//! many of its own (in memory, after reading the input once, so its process
//! start is not counted). Each side's figure of a round is its fastest
//! round trip; the ratio ours / Go is printed for the fastest rounds and
//! for the medians.
//!
//! The oracle is `$PV_KYAML_ORACLE` or `target/kyaml-oracle`
//! (`tools/kyaml-oracle/build.sh`); without it the bench says so and does
//! nothing. Before timing, both must write the same bytes.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use pv_core::yaml;

mod support;

const ROUNDS: usize = 9;
const ITERATIONS: usize = 10;

fn oracle() -> Option<PathBuf> {
    let path = std::env::var_os("PV_KYAML_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/kyaml-oracle")
        });
    path.is_file().then_some(path)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    // `cargo bench` passes `--bench`; run otherwise (`cargo test
    // --all-targets`), one round checks that both sides agree and run.
    let rounds = if std::env::args().any(|a| a == "--bench") {
        ROUNDS
    } else {
        1
    };
    let Some(oracle) = oracle() else {
        println!(
            "yaml peer: skipped, no kyaml-oracle (tools/kyaml-oracle/build.sh builds it, or set PV_KYAML_ORACLE)"
        );
        return;
    };
    let input = support::package_text(1000);
    let dir = std::env::temp_dir().join(format!("pv-yaml-peer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let file = dir.join("package.yaml");
    std::fs::write(&file, &input).expect("writes the package");

    let theirs = Command::new(&oracle)
        .arg(&file)
        .output()
        .expect("runs the oracle");
    assert!(
        theirs.status.success(),
        "{}",
        String::from_utf8_lossy(&theirs.stderr)
    );
    let ours = yaml::reformat(&input).expect("round-trips");
    assert!(
        ours.as_bytes() == theirs.stdout.as_slice(),
        "ours and the oracle write different bytes for the benchmark package"
    );

    let (mut mine, mut go) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let fastest = (0..ITERATIONS)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(yaml::reformat(&input).expect("round-trips"));
                started.elapsed()
            })
            .min()
            .expect("iterations");
        mine.push(fastest);
        let out = Command::new(&oracle)
            .arg("-bench")
            .arg(ITERATIONS.to_string())
            .arg(&file)
            .output()
            .expect("runs the oracle");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fastest = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .min()
            .expect("the oracle's timings");
        go.push(Duration::from_nanos(fastest));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut ratios: Vec<f64> = mine
        .iter()
        .zip(&go)
        .map(|(m, g)| m.as_secs_f64() / g.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    mine.sort();
    go.sort();
    let mid = rounds / 2;
    println!(
        "yaml peer, {} bytes: ours {:.1} ms, Go yaml.v3 + kyaml encoder {:.1} ms = {:.2}x (median of the rounds' ratios {:.2}x; medians {:.1} / {:.1} ms)",
        input.len(),
        ms(mine[0]),
        ms(go[0]),
        mine[0].as_secs_f64() / go[0].as_secs_f64(),
        ratios[mid],
        ms(mine[mid]),
        ms(go[mid]),
    );
}
