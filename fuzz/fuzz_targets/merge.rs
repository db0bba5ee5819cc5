//! The clone and upgrade content operations: three packages (base, theirs,
//! ours) separated by `%%%` lines, files by `### <path>` lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pv_core::merge::{self, UpstreamSource};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut packages = porch_variants_fuzz::packages(text).into_iter();
    let (Some(base), Some(theirs), Some(ours)) =
        (packages.next(), packages.next(), packages.next())
    else {
        return;
    };
    let source = UpstreamSource {
        repo: "blueprints".into(),
        directory: "web".into(),
        r#ref: "web/v2".into(),
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
    };
    let _ = merge::prepare_clone(&base, "web-east", &source);
    if let Ok(out) = merge::prepare_upgrade(&base, &theirs, &ours, &source) {
        for path in &out.changed_files {
            assert!(
                out.files.contains_key(path) || ours.contains_key(path),
                "{path} reported changed but in neither the result nor ours"
            );
        }
    }
});
