//! Property tests of the YAML layer: arbitrary input never panics, and
//! whatever parses is written as text that parses again to the same output.

use proptest::prelude::*;
use pv_core::yaml;

/// Text made of the characters that steer a YAML scanner, so that the
/// generator reaches indentation, flow, quoting, block scalars, anchors,
/// tags, comments and document markers far more often than random Unicode.
fn yamlish() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "a",
        "b",
        "key",
        "x1",
        "0",
        "1.5",
        "true",
        "~",
        "null",
        " ",
        "  ",
        "    ",
        "\n",
        "\n  ",
        "\n- ",
        "- ",
        ": ",
        ":",
        "#",
        " # c",
        "'",
        "\"",
        "\\",
        "|",
        "|-",
        ">",
        ">+",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "&a ",
        "*a",
        "!!str ",
        "!t ",
        "%YAML 1.1\n",
        "---\n",
        "...\n",
        "? ",
        "\t",
        "é",
        "😀",
        "\r\n",
        "<<: ",
        "\u{feff}",
        "\u{85}",
    ]);
    prop::collection::vec(atoms, 0..60).prop_map(|parts| parts.concat())
}

fn check_round_trip(input: &str) -> Result<(), TestCaseError> {
    let Ok(docs) = yaml::parse_stream(input) else {
        return Ok(());
    };
    let Ok(once) = yaml::emit_stream(&docs, yaml::Format::Kyaml) else {
        return Ok(());
    };
    let reparsed = yaml::parse_stream(&once);
    prop_assert!(
        reparsed.is_ok(),
        "emitted text does not parse: {:?}\nfrom {:?}",
        once,
        input
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(input in any::<String>()) {
        let _ = yaml::parse_stream(&input);
        check_round_trip(&input)?;
    }

    #[test]
    fn yaml_like_text_round_trips(input in yamlish()) {
        check_round_trip(&input)?;
    }
}

#[test]
fn deep_nesting_is_reported_not_overflowed() {
    let deep = "[".repeat(100_000);
    let err = yaml::parse_stream(&deep).expect_err("too deep");
    assert!(err.to_string().contains("max depth"), "{err}");
    let deep_block: String = (0..5000)
        .map(|i| format!("{}k:\n", " ".repeat(i)))
        .collect();
    let err = yaml::parse_stream(&deep_block).expect_err("too deep");
    assert!(err.to_string().contains("max depth"), "{err}");
}

#[test]
fn alias_bombs_are_capped_on_conversion() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
        ));
    }
    let doc = yaml::parse_document(&text).expect("parses: aliases are kept, not expanded");
    let err = yaml::to_json(&doc).expect_err("expansion is capped");
    assert!(err.to_string().contains("expands to more than"), "{err}");
    // The tree itself stays small and writes back as written.
    assert_eq!(yaml::to_string(&doc).expect("emits"), text);
}
