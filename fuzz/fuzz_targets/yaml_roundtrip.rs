//! The YAML layer: any text parses or is refused without panicking; what
//! parses emits, re-parses, and converts to JSON and back; `reformat`
//! (document at a time) writes what `emit_stream(parse_stream(..))` writes;
//! the encoder's direct emitter path writes what yaml.v3's queued one does.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pv_core::yaml;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let docs = match yaml::parse_stream(text) {
        Ok(docs) => docs,
        Err(e) => {
            let again = yaml::reformat(text).map_err(|e| e.to_string());
            assert_eq!(again, Err(e.to_string()), "reformat and parse_stream disagree");
            return;
        }
    };
    let whole = yaml::emit_stream(&docs, yaml::Format::Kyaml).map_err(|e| e.to_string());
    let streamed = yaml::reformat(text).map_err(|e| e.to_string());
    assert_eq!(streamed, whole, "reformat differs from emit_stream(parse_stream)");
    for format in [yaml::Format::Kyaml, yaml::Format::YamlV3] {
        let direct = yaml::emit_stream(&docs, format);
        let queued = yaml::__emit_stream_queued(&docs, format);
        assert_eq!(
            direct.as_ref().map_err(|e| e.to_string()),
            queued.as_ref().map_err(|e| e.to_string()),
            "the direct and queued emitter paths differ"
        );
        let Ok(emitted) = direct else {
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
