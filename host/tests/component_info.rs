//! `porch-variants component info` prints the embedded component's version,
//! size, imports (none) and every export of the world.

use std::process::Command;

#[test]
fn component_info_lists_version_size_and_exports() {
    let out = Command::new(env!("CARGO_BIN_EXE_porch-variants"))
        .args(["component", "info"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("version:  porch-variants-core "),
        "{stdout}"
    );
    assert!(stdout.contains("imports:  none"), "{stdout}");
    let loaded = if cfg!(all(unix, target_arch = "x86_64")) {
        "(machine code compiled at build time, run where it lies in the binary, and pre-instantiated)"
    } else {
        "(machine code compiled at build time, and pre-instantiated)"
    };
    assert!(stdout.contains(loaded), "{stdout}");
    let size = porch_variants::component::COMPONENT.len();
    assert!(
        stdout.contains(&format!("size:     {size} bytes")),
        "{stdout}"
    );
    for export in [
        "version()",
        "validate-package-variant(package-variant)",
        "plan-reconcile(input)",
        "apply-mutations(input)",
        "validate-package-variant-set(package-variant-set)",
        "render-package-variant-set(input)",
        "format-files(files)",
        "clone-package(input)",
        "upgrade-package(input)",
    ] {
        assert!(stdout.contains(export), "{export} missing:\n{stdout}");
    }
}
