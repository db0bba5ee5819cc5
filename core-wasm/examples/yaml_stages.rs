//! Times each stage of parsing on a file (profiling aid).
fn main() {
    let input = std::fs::read_to_string("/tmp/pkg.yaml").expect("input");
    for (name, f) in [
        (
            "tokens",
            &(|s: &str| pv_core::yaml::__profile_stage(s, false)) as &dyn Fn(&str) -> usize,
        ),
        ("events", &|s: &str| pv_core::yaml::__profile_stage(s, true)),
        ("nodes", &|s: &str| {
            pv_core::yaml::parse_stream(s).map(|d| d.len()).unwrap_or(0)
        }),
    ] {
        let start = std::time::Instant::now();
        let mut n = 0;
        for _ in 0..10 {
            n = f(&input);
        }
        println!("{name}: {:?} ({n})", start.elapsed() / 10);
    }
}
