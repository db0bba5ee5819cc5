//! The Go `GOOS=js GOARCH=wasm` ABI, by hand, and the fixed-arena
//! allocator: everything kpt's wasm runtimes (its nodejs glue around Go's
//! `wasm_exec.js`, and wasmtime with `prep/wasmexec`) need from a module.
//!
//! This is the project's one place with `unsafe` code, and the only place
//! it can be: the ABI is raw linear memory shared with the host (a "stack
//! pointer" frame the host reads arguments from and writes results into),
//! imports are `extern` functions, exports need `#[no_mangle]`, and a global
//! allocator is an `unsafe` trait. Everything else (what the callbacks do)
//! is safe code in [`crate::Handler`].
//!
//! How the ABI works (see `shared/reference/kpt-wasm-and-krm-functions.md`
//! section 1.3):
//!
//! * Every import from module `go` takes one `i32`, the address of a frame
//!   (`sp`): arguments at `sp+8`, `sp+16`, …, results written back at fixed
//!   offsets (some relative to a fresh `getsp()`). `getsp` returns the
//!   address of one static 8-byte-aligned frame; Rust never switches stacks,
//!   so the host re-reading it gets the same frame.
//! * JS values are 8 bytes: a float64 that is not NaN is a number, all zero
//!   bits is `undefined`, otherwise NaN-boxed with the high word
//!   `0x7FF80000 | type` and the low word a reference id. Ids 2, 5 and 6 are
//!   `null`, `globalThis` and the host's `Go` object.
//! * `run(argc, argv)` registers `globalThis.processResourceList` and
//!   `processResourceListErrors` as `go._makeFuncWrapper(1)` and `(2)` and
//!   returns without `runtime.wasmExit`, like a Go program blocked on a
//!   channel.
//! * Calling a wrapper sets `go._pendingEvent = {id, this, args}` and calls
//!   `resume()`, which reads the event, clears it, runs the callback on
//!   `args[0]` (the ResourceList text) and sets `event.result`.
//! * Memory is `--initial-memory` = `--max-memory` (see `build.rs`) and the
//!   global allocator serves only a static arena: memory never grows, so
//!   views the host took at start stay valid (wasmtime's runtime never
//!   refreshes its view; `runtime.resetMemoryDataView` is not needed).
//! * Nothing is written to stdout or stderr: under kpt's node glue both go
//!   to the ResourceList stream.
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::{Handler, Served, ARENA_BYTES, SERVED};

// ---------------------------------------------------------------- arena --

static mut ARENA: [MaybeUninit<u8>; ARENA_BYTES] = [MaybeUninit::uninit(); ARENA_BYTES];

/// Talc over the static arena, with byte counters.
struct CountingArena {
    talc: talc::wasm::WasmArenaTalc,
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl CountingArena {
    fn grew(&self, bytes: usize) {
        let used = self.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(used, Ordering::Relaxed);
    }

    fn shrank(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to Talc, which upholds `GlobalAlloc`'s
// contract; the counters are plain atomics. A failed allocation returns null
// (Rust then aborts, which traps; `Handler` refuses inputs that would not fit
// so that a too-large package gets an error result instead).
unsafe impl GlobalAlloc for CountingArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.talc.alloc(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { self.talc.alloc_zeroed(layout) };
        if !p.is_null() {
            self.grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { self.talc.dealloc(p, layout) };
        self.shrank(layout.size());
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { self.talc.realloc(p, layout, new_size) };
        if !q.is_null() {
            self.shrank(layout.size());
            self.grew(new_size);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: CountingArena = CountingArena {
    // SAFETY: ARENA is handed to the allocator here and touched by nothing
    // else.
    talc: unsafe { talc::wasm::new_wasm_arena_allocator(&raw mut ARENA) },
    used: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

/// Bytes of the arena not in use (allocator overhead aside).
fn arena_free() -> usize {
    ARENA_BYTES.saturating_sub(ALLOCATOR.used.load(Ordering::Relaxed))
}

/// Most arena bytes ever in use at once (for measurements; kpt ignores
/// extra exports).
#[unsafe(no_mangle)]
pub extern "C" fn arena_peak_bytes() -> u32 {
    u32::try_from(ALLOCATOR.peak.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
}

/// Size of the fixed arena in bytes.
#[unsafe(no_mangle)]
pub extern "C" fn arena_capacity_bytes() -> u32 {
    u32::try_from(ARENA_BYTES).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------- frame --

/// The one ABI frame every import call uses (`getsp()`); 128 bytes cover
/// the largest layout used (`valueCall`: result at +56, flag at +64).
#[repr(C, align(8))]
struct Frame(UnsafeCell<[u64; 16]>);

// SAFETY: the module is single-threaded; the frame is only touched around
// import calls on that thread.
unsafe impl Sync for Frame {}

static FRAME: Frame = Frame(UnsafeCell::new([0; 16]));

fn sp() -> i32 {
    FRAME.0.get() as usize as i32
}

fn put(offset: usize, value: u64) {
    debug_assert!(offset.is_multiple_of(8) && offset < 128);
    // SAFETY: in bounds and aligned (checked above); single-threaded.
    unsafe { ptr::write_volatile(FRAME.0.get().cast::<u64>().add(offset / 8), value) }
}

fn get(offset: usize) -> u64 {
    debug_assert!(offset.is_multiple_of(8) && offset < 128);
    // SAFETY: as for `put`.
    unsafe { ptr::read_volatile(FRAME.0.get().cast::<u64>().add(offset / 8)) }
}

fn get_u8(offset: usize) -> u8 {
    // SAFETY: in bounds of the 128-byte frame; single-threaded.
    unsafe { ptr::read_volatile(FRAME.0.get().cast::<u8>().add(offset)) }
}

// -------------------------------------------------------------- imports --

#[link(wasm_import_module = "go")]
unsafe extern "C" {
    #[link_name = "syscall/js.valueGet"]
    fn value_get(sp: i32);
    #[link_name = "syscall/js.valueSet"]
    fn value_set(sp: i32);
    #[link_name = "syscall/js.valueIndex"]
    fn value_index(sp: i32);
    #[link_name = "syscall/js.valueCall"]
    fn value_call(sp: i32);
    #[link_name = "syscall/js.valuePrepareString"]
    fn value_prepare_string(sp: i32);
    #[link_name = "syscall/js.valueLoadString"]
    fn value_load_string(sp: i32);
    #[link_name = "syscall/js.stringVal"]
    fn string_val(sp: i32);
    #[link_name = "syscall/js.finalizeRef"]
    fn finalize_ref(sp: i32);
    #[link_name = "runtime.walltime"]
    fn walltime(sp: i32);
}

/// The host's wall clock as Go's `runtime.walltime` gives it: seconds
/// and nanoseconds since the Unix epoch.
pub fn wall_clock() -> (i64, u32) {
    // SAFETY: the import writes its results into the frame.
    unsafe { walltime(sp()) };
    (get(8) as i64, (get(16) & 0xFFFF_FFFF) as u32)
}

/// A JS value as the ABI encodes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ref(u64);

const NAN_HEAD: u64 = 0x7FF8_0000;
const TYPE_OBJECT: u64 = 1;

impl Ref {
    const UNDEFINED: Ref = Ref(0);
    const NULL: Ref = Ref(NAN_HEAD << 32 | 2);
    const GLOBAL: Ref = Ref((NAN_HEAD | TYPE_OBJECT) << 32 | 5);
    const GO: Ref = Ref((NAN_HEAD | TYPE_OBJECT) << 32 | 6);

    fn number(n: f64) -> Ref {
        Ref(n.to_bits())
    }

    fn is_reference(self) -> bool {
        (self.0 >> 32) & NAN_HEAD == NAN_HEAD
    }

    fn as_number(self) -> Option<f64> {
        let f = f64::from_bits(self.0);
        (self.0 != 0 && !f.is_nan()).then_some(f)
    }

    /// Releases the host's reference (predefined ids are never freed).
    fn release(self) {
        if self.is_reference() && (self.0 & 0xFFFF_FFFF) > 6 {
            put(8, self.0);
            // SAFETY: the frame holds the argument the import reads.
            unsafe { finalize_ref(sp()) }
        }
    }
}

fn put_str(offset: usize, s: &str) {
    put(offset, s.as_ptr() as usize as u64);
    put(offset + 8, s.len() as u64);
}

/// `v[name]`.
fn get_property(v: Ref, name: &str) -> Ref {
    put(8, v.0);
    put_str(16, name);
    // SAFETY: the frame holds the arguments; `name` outlives the call.
    unsafe { value_get(sp()) };
    Ref(get(32))
}

/// `v[name] = x`.
fn set_property(v: Ref, name: &str, x: Ref) {
    put(8, v.0);
    put_str(16, name);
    put(32, x.0);
    // SAFETY: as for `get_property`.
    unsafe { value_set(sp()) }
}

/// `v[i]`.
fn index(v: Ref, i: u64) -> Ref {
    put(8, v.0);
    put(16, i);
    // SAFETY: the frame holds the arguments.
    unsafe { value_index(sp()) };
    Ref(get(24))
}

/// `v[method](...args)`; `None` when it threw.
fn call(v: Ref, method: &str, args: &[Ref]) -> Option<Ref> {
    let raw: Vec<u64> = args.iter().map(|a| a.0).collect();
    put(8, v.0);
    put_str(16, method);
    put(32, raw.as_ptr() as usize as u64);
    put(40, raw.len() as u64);
    put(48, raw.len() as u64);
    // SAFETY: the frame holds the arguments; `method` and `raw` outlive the
    // call.
    unsafe { value_call(sp()) };
    let result = Ref(get(56));
    (get_u8(64) == 1).then_some(result)
}

/// A JS string made from `s`.
fn js_string(s: &str) -> Ref {
    put_str(8, s);
    // SAFETY: the frame holds the arguments; `s` outlives the call.
    unsafe { string_val(sp()) };
    Ref(get(24))
}

/// `String(v)` as UTF-8 (`undefined` reads as the empty string).
fn load_string(v: Ref) -> String {
    if v == Ref::UNDEFINED {
        return String::new();
    }
    put(8, v.0);
    // SAFETY: the frame holds the argument.
    unsafe { value_prepare_string(sp()) };
    let bytes_ref = Ref(get(16));
    let len = usize::try_from(get(24)).unwrap_or(0);
    let mut buf = vec![0u8; len];
    put(8, bytes_ref.0);
    put(16, buf.as_mut_ptr() as usize as u64);
    put(24, len as u64);
    put(32, len as u64);
    // SAFETY: `buf` has `len` writable bytes, which the host fills.
    unsafe { value_load_string(sp()) };
    bytes_ref.release();
    String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

// -------------------------------------------------------------- exports --

static HANDLER: Handler = match SERVED {
    Some(s) => Handler::serving(s),
    None => Handler::serving(Served::Krm(
        porch_variants_functions::Function::ApplyPackageVariant,
    )),
};

/// `getsp()`: the frame address the host reads arguments from.
#[unsafe(no_mangle)]
pub extern "C" fn getsp() -> i32 {
    sp()
}

/// `run(argc, argv)`: registers the callbacks as JS globals, then
/// returns (the host keeps the instance for callbacks).
#[unsafe(no_mangle)]
pub extern "C" fn run(_argc: i32, _argv: i32) {
    for (id, name) in [
        (crate::PROCESS_RESOURCE_LIST, "processResourceList"),
        (
            crate::PROCESS_RESOURCE_LIST_ERRORS,
            "processResourceListErrors",
        ),
        (
            crate::PROCESS_RESOURCE_LIST_STDERR,
            "processResourceListStderr",
        ),
    ] {
        if let Some(f) = call(Ref::GO, "_makeFuncWrapper", &[Ref::number(f64::from(id))]) {
            set_property(Ref::GLOBAL, name, f);
            f.release();
        }
    }
}

/// `resume()`: handles the pending callback event.
#[unsafe(no_mangle)]
pub extern "C" fn resume() {
    let event = get_property(Ref::GO, "_pendingEvent");
    if event == Ref::NULL || event == Ref::UNDEFINED {
        return;
    }
    set_property(Ref::GO, "_pendingEvent", Ref::NULL);
    let id = get_property(event, "id");
    let args = get_property(event, "args");
    let arg = index(args, 0);
    let input = load_string(arg);
    let callback = id.as_number().map_or(0, |n| n as u32);
    let output = HANDLER.call(callback, &input, arena_free());
    drop(input);
    let result = js_string(&output);
    drop(output);
    set_property(event, "result", result);
    for r in [result, arg, args, event] {
        r.release();
    }
}
