//! The embedded component starts from the machine code `build.rs` compiled
//! for this machine: with the default limits no code is compiled at run
//! time and no code cache is read. An engine the precompiled code does not
//! fit (other limits) is refused with an error saying why, and the
//! component is then compiled instead. Where the platform allows it
//! (x86-64 Unix), the precompiled code runs where it lies in the binary:
//! nothing is copied.

use std::time::Instant;

use porch_variants::component::precompiled::{Loading, LOADING, PRECOMPILED};
use porch_variants::component::types::File;
use porch_variants::component::{CodeCache, CodeSource, ComponentConfig, CoreComponent, Fuel};

fn no_cache() -> ComponentConfig {
    ComponentConfig {
        cache: CodeCache::Disabled,
        ..ComponentConfig::default()
    }
}

#[test]
fn the_default_limits_start_from_the_precompiled_code() {
    assert!(
        !PRECOMPILED.is_empty(),
        "the build embeds the precompiled component"
    );
    let started = Instant::now();
    let core = CoreComponent::with_config(no_cache()).expect("loads");
    let elapsed = started.elapsed();
    assert_eq!(core.startup().code, CodeSource::Precompiled);
    eprintln!(
        "start-up from the precompiled code: {:.1} ms",
        elapsed.as_secs_f64() * 1e3
    );
    assert!(core
        .version()
        .expect("runs")
        .starts_with("porch-variants-core "));
    let precompiled = CoreComponent::from_precompiled(no_cache()).expect("fits");
    assert_eq!(precompiled.startup().code, CodeSource::Precompiled);
    assert_eq!(
        core.startup().in_place,
        LOADING == Loading::InPlace,
        "the code runs from the binary exactly where the platform allows it"
    );
    if cfg!(all(unix, target_arch = "x86_64")) {
        assert_eq!(LOADING, Loading::InPlace);
    }
    // Two components loaded in place share the same pages, and both run.
    assert_eq!(precompiled.startup().in_place, core.startup().in_place);
    assert!(precompiled.version().is_ok());
    drop(precompiled);
    // Dropping one leaves the other's code executable.
    assert!(core.version().is_ok());
}

#[test]
fn the_precompiled_code_keeps_working_after_a_trap() {
    // A call stopped for fuel traps; the trap's lookup reads the artifact's
    // trap table, which start-up let the kernel drop from memory.
    let tight = ComponentConfig {
        fuel: Some(Fuel {
            base: 1_000,
            per_input_byte: 0,
        }),
        ..no_cache()
    };
    let core = CoreComponent::with_config(tight).expect("loads");
    assert_eq!(core.startup().code, CodeSource::Precompiled);
    let files = [File {
        path: "a.yaml".into(),
        content: "a: 1\n".repeat(1_000),
    }];
    let err = core.format_files(&files).expect_err("out of fuel");
    assert!(err.to_string().contains("ran out of fuel"), "{err}");
    let err = core.format_files(&files).expect_err("out of fuel again");
    assert!(err.to_string().contains("ran out of fuel"), "{err}");
}

#[test]
fn an_engine_the_precompiled_code_does_not_fit_is_refused_clearly() {
    // No fuel metering: the precompiled code counts fuel, so it does not
    // fit an engine that does not.
    let unmetered = ComponentConfig {
        fuel: None,
        ..no_cache()
    };
    let err = CoreComponent::from_precompiled(unmetered.clone())
        .expect_err("the precompiled code does not fit");
    let message = err.to_string();
    assert!(
        message.contains("the precompiled component does not fit this engine"),
        "{message}"
    );
    assert!(message.contains("fuel"), "the reason is named: {message}");

    let compiled = CoreComponent::with_config(unmetered).expect("compiled instead");
    assert_eq!(compiled.startup().code, CodeSource::Compiled);
    assert!(compiled
        .version()
        .expect("runs")
        .starts_with("porch-variants-core "));
}
