//! Parses (and optionally emits) a generated package in a loop, for
//! profiling: `cargo run --release --example yaml_profile -- MODE N [FILE]`.
//!
//! MODE is `both` (`yaml::reformat`), `parse`, `emit`, or one stage of the
//! parse: `tokens` (the scanner alone) or `events` (scanner and parser);
//! `serde_yaml` reads and writes the same input with serde_yaml (values
//! only, the reference the YAML benchmark compares against; collect
//! `yaml_profile::serde_yaml_round_trip` under callgrind); `dump N FILE OUT`
//! writes the reformatted FILE to OUT instead.

use pv_core::yaml;

#[path = "../benches/reference/mod.rs"]
mod reference;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("both", String::as_str);
    let iterations: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20);
    let input = std::fs::read_to_string(args.get(3).map_or("/tmp/pkg.yaml", String::as_str))
        .expect("input file");
    if mode == "dump" {
        // Writes the reformatted input to the path given as the iteration
        // count's successor (for byte-for-byte comparisons).
        let out = yaml::reformat(&input).expect("round-trips");
        let out2 = yaml::emit_stream(
            &yaml::parse_stream(&input).expect("parses"),
            yaml::Format::Kyaml,
        )
        .expect("emits");
        assert_eq!(out, out2, "reformat differs from emit_stream(parse_stream)");
        let path = args.get(4).map_or("/tmp/reformatted.yaml", String::as_str);
        std::fs::write(path, out).expect("output file");
        return;
    }
    let docs = yaml::parse_stream(&input).expect("parses");
    let start = std::time::Instant::now();
    for _ in 0..iterations {
        match mode {
            "parse" => drop(yaml::parse_stream(&input).expect("parses")),
            "emit" => drop(yaml::emit_stream(&docs, yaml::Format::Kyaml).expect("emits")),
            "tokens" => {
                std::hint::black_box(yaml::__profile_stage(&input, false));
            }
            "events" => {
                std::hint::black_box(yaml::__profile_stage(&input, true));
            }
            "serde_yaml" => drop(reference::serde_yaml_round_trip(&input)),
            _ => drop(yaml::reformat(&input).expect("round-trips")),
        }
    }
    let per = start.elapsed() / u32::try_from(iterations).unwrap_or(1);
    println!("{mode}: {per:?} per iteration, {} bytes", input.len());
}
