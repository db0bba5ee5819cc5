//! Instances kept between calls: a large call's instance is kept (its
//! memory stays resident for the next large call), one such instance at
//! most, and a call on a kept instance answers exactly as on a fresh one.

mod common;

use std::thread;

use porch_variants::component::CoreComponent;

const SMALL: usize = 16 << 20;
const LARGE: usize = 128 << 20;

fn large_ones(component: &CoreComponent) -> usize {
    component
        .idle_memory()
        .into_iter()
        .filter(|m| *m > SMALL)
        .count()
}

#[test]
fn large_calls_keep_one_instance_which_answers_as_a_fresh_one() {
    // Its own component, so that no other test takes or returns instances.
    let component = CoreComponent::new().expect("component loads");
    // The 10,000-target render grows past 16 MiB.
    let input = common::render_input();
    let fresh = component
        .render_package_variant_set(&input)
        .expect("no trap")
        .expect("renders");
    let kept = component.idle_memory();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0] > SMALL && kept[0] <= LARGE, "{kept:?}");
    let again = component
        .render_package_variant_set(&input)
        .expect("no trap")
        .expect("renders");
    assert_eq!(format!("{again:?}"), format!("{fresh:?}"));
    assert_eq!(component.idle_memory(), kept, "the same instance again");

    // Two large calls at once: two instances, of which one is kept.
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                component
                    .render_package_variant_set(&input)
                    .expect("no trap")
                    .expect("renders")
            });
        }
    });
    assert_eq!(large_ones(&component), 1, "{:?}", component.idle_memory());

    // A small call beside a large one: both kept, the small one under 16 MiB.
    let small = common::mutation_input();
    thread::scope(|s| {
        s.spawn(|| {
            component
                .render_package_variant_set(&input)
                .expect("no trap")
        });
        s.spawn(|| component.apply_mutations(&small).expect("no trap"));
    });
    let kept = component.idle_memory();
    assert!(kept.len() <= 2, "{kept:?}");
    assert_eq!(large_ones(&component), 1, "{kept:?}");
}
