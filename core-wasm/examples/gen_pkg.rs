//! Writes the benchmarks' generated 1,000-resource package to a file (the
//! input of the profiling examples): `cargo run --release -p
//! porch-variants-core --example gen_pkg [PATH]` (default `/tmp/pkg.yaml`).
#[path = "../benches/support/mod.rs"]
mod support;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/pkg.yaml".into());
    std::fs::write(path, support::package_text(1000)).expect("write");
}
