//! The component as machine code, compiled by `build.rs` for the machine
//! that built this binary (wasmtime's `Engine::precompile_component`, under
//! [`super::engine_config`]'s settings for the default limits), so that
//! start-up deserialises it instead of compiling: no code cache needed, and
//! no machine compiles it at run time unless it differs from the one that
//! built it.
//!
//! On x86-64 Linux and other Unix systems the machine code runs where it
//! lies in the binary: the artifact is embedded page-aligned, and loading
//! it makes its code pages executable in place ([`InPlace`]) instead of
//! copying 10 MB into fresh memory. Only the pages the process runs or reads
//! are then ever paged in, which is most of the difference in start-up time
//! and peak memory against the native core. Elsewhere it is copied, as
//! wasmtime's `Component::deserialize` does.

// wasmtime's `Component::deserialize` is `unsafe` because it trusts its
// input to be an artifact wasmtime itself produced: machine code is not
// validated again; using the artifact in place adds `mprotect` on the
// binary's own pages. This module is the only `unsafe` in the crate.
#![allow(unsafe_code)]

use std::sync::Mutex;

use wasmtime::component::Component;
use wasmtime::Engine;

/// Page alignment for the embedded artifact: its text section starts on a
/// page boundary within it, so with the artifact itself page-aligned the
/// code can be made executable where it lies.
#[repr(C, align(4096))]
struct PageAligned<T: ?Sized>(T);

static ALIGNED: &PageAligned<[u8]> = &PageAligned(*include_bytes!(concat!(
    env!("OUT_DIR"),
    "/porch-variants.cwasm"
)));

/// The precompiled component (empty when the build made none: a
/// cross-compiled build, or `PORCH_VARIANTS_PRECOMPILE=0`), page-aligned.
pub static PRECOMPILED: &[u8] = &ALIGNED.0;

/// Why the precompiled component could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PrecompiledError {
    /// The build embedded none.
    #[error("this build embeds no precompiled component (built for another machine, or with PORCH_VARIANTS_PRECOMPILE=0)")]
    Missing,
    /// wasmtime refused it for this engine: another wasmtime version, other
    /// compilation settings (limits other than the default ones), or a
    /// processor that lacks a feature the building machine had.
    #[error("the precompiled component does not fit this engine: {0}")]
    Refused(String),
}

/// How the precompiled code was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loading {
    /// Made executable where it lies in the binary: nothing copied.
    InPlace,
    /// Copied into fresh memory (platforms without [`InPlace`]).
    Copied,
}

/// How this build loads the precompiled code.
pub const LOADING: Loading = if in_place::SUPPORTED {
    Loading::InPlace
} else {
    Loading::Copied
};

/// The precompiled component, loaded into an engine with the compilation
/// settings of [`super::engine_config::compilation_config`] for `fuel` and
/// `epoch_interruption` (wasmtime refuses the artifact, saying why, unless
/// they are those the build script used).
///
/// Code loaded in place exists once per process (wasmtime registers code by
/// its address), so every load after the first returns the same engine and
/// component; they live as long as the process.
pub fn load(fuel: bool, epoch_interruption: bool) -> Result<(Engine, Component), PrecompiledError> {
    if PRECOMPILED.is_empty() {
        return Err(PrecompiledError::Missing);
    }
    if !in_place::SUPPORTED {
        let config = super::engine_config::compilation_config(fuel, epoch_interruption);
        let engine = Engine::new(&config).map_err(refused)?;
        // SAFETY: `PRECOMPILED` is part of this binary, written by its build
        // script with wasmtime's `Engine::precompile_component` (the same
        // wasmtime version, pinned in Cargo.lock) from the component embedded
        // beside it; nothing outside the build can change it. wasmtime checks
        // the artifact's header, version and settings against `engine` and
        // returns an error, not undefined behaviour, when they differ.
        let component = unsafe { Component::deserialize(&engine, PRECOMPILED) }.map_err(refused)?;
        return Ok((engine, component));
    }
    static LOADED: Mutex<Option<(bool, bool, Engine, Component)>> = Mutex::new(None);
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((f, e, engine, component)) = loaded.as_ref() {
        if (*f, *e) == (fuel, epoch_interruption) {
            return Ok((engine.clone(), component.clone()));
        }
        // Settings that fit the artifact are the build's; others are refused
        // below, before anything is registered.
    }
    let mut config = super::engine_config::compilation_config(fuel, epoch_interruption);
    in_place::install(&mut config);
    let engine = Engine::new(&config).map_err(refused)?;
    // SAFETY: as for `deserialize` above; in addition, the memory is a
    // `static` of this binary, so it lives as long as the process and
    // nothing writes to it (it is in a read-only segment, and `InPlace` only
    // ever makes its pages read-only or read-and-execute). It is loaded at
    // most once (`LOADED`), as wasmtime requires of code at one address.
    let component =
        unsafe { Component::deserialize_raw(&engine, std::ptr::NonNull::from(PRECOMPILED)) }
            .map_err(refused)?;
    // The data segments are copied into the instances' memory image once,
    // here rather than at the first call; after that only the code is used,
    // so the rest of the artifact can leave memory.
    component
        .initialize_copy_on_write_image()
        .map_err(refused)?;
    in_place::release_all_but(component.text());
    *loaded = Some((fuel, epoch_interruption, engine.clone(), component.clone()));
    Ok((engine, component))
}

fn refused(e: wasmtime::Error) -> PrecompiledError {
    PrecompiledError::Refused(format!("{e:#}"))
}

/// Whether `component`'s machine code runs where it lies in this binary
/// (loaded [in place](Loading::InPlace)) rather than from a copy.
pub fn runs_in_place(component: &Component) -> bool {
    let artifact = PRECOMPILED.as_ptr_range();
    let text = component.text().as_ptr_range();
    !PRECOMPILED.is_empty()
        && artifact.start <= text.start
        && text.end <= artifact.end
        && !text.is_empty()
}

#[cfg(all(unix, target_arch = "x86_64"))]
mod in_place {
    //! Publishing code where it lies: `mprotect` to read-and-execute, and
    //! back. x86-64 keeps instruction and data caches coherent and has no
    //! branch-target marking to set, so nothing else is needed (wasmtime's
    //! own publishing does the same there).

    use std::ffi::c_void;
    use std::ops::Range;

    use rustix::mm::{mprotect, MprotectFlags};

    /// This platform runs the precompiled code in place.
    pub const SUPPORTED: bool = true;

    /// Makes `config`'s engine publish code with [`InPlace`].
    pub fn install(config: &mut wasmtime::Config) {
        config.with_custom_code_memory(Some(std::sync::Arc::new(InPlace::new())));
    }

    /// Lets the kernel drop the pages of the embedded artifact outside
    /// `text` (its headers, metadata and data segments, read while loading):
    /// they are clean pages of the binary's file mapping, so a later read
    /// (a trap's lookup) reads them again from the file. Only a hint: an
    /// error is logged and changes nothing.
    pub fn release_all_but(text: &[u8]) {
        let page = rustix::param::page_size();
        let artifact = super::PRECOMPILED.as_ptr_range();
        let (start, end) = (artifact.start as usize, artifact.end as usize);
        let text = text.as_ptr_range();
        let (text_start, text_end) = (text.start as usize, text.end as usize);
        if !(start..=end).contains(&text_start) || !(start..=end).contains(&text_end) {
            return;
        }
        // Whole pages only: the static is page-aligned, the text section
        // starts and ends on page boundaries, and the last partial page is
        // left alone.
        let after = text_end.next_multiple_of(page);
        let tail_end = end - end % page;
        for (from, to) in [(start, text_start), (after, tail_end)] {
            if to <= from {
                continue;
            }
            // SAFETY: a range of the embedded artifact, a read-only static
            // mapped from the binary's file and never written: dropping its
            // pages only makes the next read fetch the same bytes again.
            let dropped = unsafe {
                rustix::mm::madvise(
                    from as *mut c_void,
                    to - from,
                    rustix::mm::Advice::LinuxDontNeed,
                )
            };
            if let Err(e) = dropped {
                tracing::debug!(error = %e, "releasing the component artifact's loaded pages");
            }
        }
    }

    /// wasmtime's hook for making code executable, for an engine that only
    /// loads the embedded artifact.
    pub struct InPlace {
        page: usize,
        embedded: Range<usize>,
    }

    impl InPlace {
        fn new() -> Self {
            let start = super::PRECOMPILED.as_ptr() as usize;
            Self {
                page: rustix::param::page_size(),
                embedded: start..start + super::PRECOMPILED.len(),
            }
        }

        fn protect(
            &self,
            ptr: *const u8,
            len: usize,
            flags: MprotectFlags,
        ) -> wasmtime::Result<()> {
            // SAFETY: wasmtime passes the text section of code it owns (here,
            // the embedded artifact), aligned to `required_alignment`; only
            // its protection changes, never its contents.
            unsafe { mprotect(ptr.cast_mut().cast::<c_void>(), len, flags) }.map_err(|e| {
                wasmtime::format_err!("changing the protection of the component's code: {e}")
            })
        }
    }

    impl wasmtime::CustomCodeMemory for InPlace {
        fn required_alignment(&self) -> usize {
            self.page
        }

        fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
            self.protect(ptr, len, MprotectFlags::READ | MprotectFlags::EXEC)
        }

        fn unpublish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
            // The binary's own pages go back to read-only, never writable.
            let flags = if self.embedded.contains(&(ptr as usize)) {
                MprotectFlags::READ
            } else {
                MprotectFlags::READ | MprotectFlags::WRITE
            };
            self.protect(ptr, len, flags)
        }
    }
}

#[cfg(not(all(unix, target_arch = "x86_64")))]
mod in_place {
    //! Other platforms copy the code (see the module's documentation).

    /// This platform copies the precompiled code.
    pub const SUPPORTED: bool = false;

    /// Nothing to install: wasmtime publishes its copy itself.
    pub fn install(_: &mut wasmtime::Config) {}

    /// Nothing to release: the copy is wasmtime's.
    pub fn release_all_but(_: &[u8]) {}
}
