//! The YAML layer: any text parses or is refused without panicking; what
//! parses emits, re-parses, and converts to JSON and back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pv_core::yaml;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(docs) = yaml::parse_stream(text) else {
        return;
    };
    for format in [yaml::Format::Kyaml, yaml::Format::YamlV3] {
        let Ok(emitted) = yaml::emit_stream(&docs, format) else {
            continue;
        };
        let again = yaml::parse_stream(&emitted)
            .unwrap_or_else(|e| panic!("emitted YAML does not re-parse: {e}\n{emitted}"));
        yaml::emit_stream(&again, format).expect("re-parsed YAML emits");
    }
    for doc in &docs {
        if let Ok(json) = yaml::to_json(doc) {
            let node = yaml::from_json(&json);
            let _ = yaml::to_string(&node);
        }
    }
});
