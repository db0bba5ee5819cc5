//! Test doubles of porch-variants' stores, kept out of the shipped binary:
//! [`faulty`], a wrapper of both store traits that numbers calls and
//! injects faults (crashes, transient errors, conflicts, stale reads).

pub mod faulty;
