//! The embedded component starts from the machine code `build.rs` compiled
//! for this machine: with the default limits no code is compiled at run
//! time and no code cache is read. An engine the precompiled code does not
//! fit (other limits) is refused with an error saying why, and the
//! component is then compiled instead.

use std::time::Instant;

use porch_variants::component::precompiled::PRECOMPILED;
use porch_variants::component::{CodeCache, CodeSource, ComponentConfig, CoreComponent};

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
