//! Both kpt functions on any ResourceList text: never panic, always write a
//! ResourceList back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for output in [
        porch_variants_functions::apply::process(text),
        porch_variants_functions::render::process(text),
    ] {
        assert!(
            output.resource_list.contains("ResourceList") || output.failed(),
            "no ResourceList and no error"
        );
    }
});
