//! The host side of Go's `wasm_exec.js`, on wasmtime: the `gojs` (Go ≥
//! 1.21) and `go` (older Go, kpt's own wasmtime runtime) imports, and the
//! `run` / `_resume` / `_pendingEvent` protocol by which the host starts
//! the program and then calls the functions it registered.
//!
//! Every import takes one `i32`, the Go stack pointer `sp`: arguments are
//! read from `sp+8`, `sp+16`, … and results written back at fixed offsets
//! (after a call that may have run Go code, at offsets from a fresh
//! `getsp()`, because Go may have moved its stack). JavaScript values cross
//! as 8 bytes: a float64 that is not NaN is a number, all zero bits
//! `undefined`, otherwise a NaN-boxed reference id (see [`super::js`]).
//! Offsets, conversions and the exceptions each import catches or lets
//! through follow `wasm_exec.js` exactly.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wasmtime::{
    AsContextMut, Caller, InstancePre, Linker, Memory, ResourceLimiter, Store, StoreContextMut,
    Trap, TypedFunc,
};

use super::error::WasmFnError;
use super::js::{self, Js, Native, OverLimit, Stream, Val, NAN_HEAD};
use super::{ClockMode, FnRun, Limits, EPOCH_TICK};

/// Where `run` finds argv and the environment (`wasm_exec.js`).
const ARGV_OFFSET: u64 = 4096;
/// The linker's lowest data address; argv must end below it.
const MIN_DATA_ADDR: u64 = 4096 + 8192;
/// `_resume` calls after one timer fired while its id stays scheduled
/// (`wasm_exec.js` loops for ever; a module looping here is stopped).
const MAX_MISSED_TIMEOUTS: usize = 1000;

/// Why the host stopped the module from inside an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The program exited while an import was running Go code.
    Exited,
    /// A string or a stream went over the output limit.
    Output {
        what: &'static str,
        size: u64,
        limit: u64,
    },
    /// The host allocation limit was reached.
    HostMemory,
    /// An exception nothing in `wasm_exec.js` catches.
    Exception(String),
    /// The module passed an address outside its memory, or is malformed.
    Fault(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Exited => write!(f, "the Go program has already exited"),
            Stop::Output { what, size, limit } => {
                write!(
                    f,
                    "{what} of {size} bytes is over the output limit of {limit} bytes"
                )
            }
            Stop::HostMemory => write!(f, "host allocation limit reached"),
            Stop::Exception(m) => write!(f, "uncaught exception: {m}"),
            Stop::Fault(m) => write!(f, "{m}"),
        }
    }
}

/// How an import or native ends early.
#[derive(Debug)]
pub(crate) enum Abort {
    /// The host stops the module.
    Stop(Stop),
    /// Go code run from inside the import failed (a trap, fuel, the
    /// deadline, or a stop further in): passed on unchanged.
    Nested(wasmtime::Error),
}

impl From<Stop> for Abort {
    fn from(s: Stop) -> Self {
        Abort::Stop(s)
    }
}

impl From<OverLimit> for Abort {
    fn from(_: OverLimit) -> Self {
        Abort::Stop(Stop::HostMemory)
    }
}

/// A scheduled `setTimeout` of `runtime.scheduleTimeoutEvent`.
#[derive(Debug, Clone, Copy)]
struct Timer {
    /// When it fires, in nanoseconds of [`Clock::elapsed_ns`].
    due_ns: u64,
    fired: bool,
}

/// The run's clock: real time, or real time plus whatever timer waits
/// were skipped ([`ClockMode::Virtual`]).
#[derive(Debug)]
struct Clock {
    start: Instant,
    /// Milliseconds since the epoch at `start` (`timeOrigin`).
    origin_ms: f64,
    skipped_ns: u64,
    mode: ClockMode,
}

impl Clock {
    fn new(mode: ClockMode) -> Clock {
        let origin_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3);
        Clock {
            start: Instant::now(),
            origin_ms,
            skipped_ns: 0,
            mode,
        }
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_add(self.skipped_ns)
    }

    /// `performance.now() + timeOrigin`, in milliseconds.
    fn now_ms_precise(&self) -> f64 {
        self.origin_ms + self.elapsed_ns() as f64 / 1e6
    }

    /// `Date.now()`.
    fn now_ms(&self) -> f64 {
        self.now_ms_precise().floor()
    }
}

/// What a store holds during one run.
pub(crate) struct HostState {
    js: Js,
    memory: Option<Memory>,
    getsp: Option<TypedFunc<(), i32>>,
    resume: Option<TypedFunc<(), ()>>,
    exited: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    timers: BTreeMap<i32, Timer>,
    next_timer: i32,
    clock: Clock,
    max_memory: usize,
    max_output: usize,
    denied_memory: Option<usize>,
    stop: Option<Stop>,
    /// Times Go code ran from the host (`run`, `resume`); an import that
    /// sees it change re-reads `getsp()`.
    entries: u64,
}

impl HostState {
    fn new(limits: &Limits) -> HostState {
        HostState {
            js: Js::new(limits.max_host_allocation as u64),
            memory: None,
            getsp: None,
            resume: None,
            exited: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
            timers: BTreeMap::new(),
            next_timer: 1,
            clock: Clock::new(limits.clock),
            max_memory: limits.max_memory,
            max_output: limits.max_output,
            denied_memory: None,
            stop: None,
            entries: 0,
        }
    }

    /// Appends to stdout or stderr, within the output limit.
    fn write(&mut self, stream: Stream, bytes: &[u8]) -> Result<(), Stop> {
        let (buf, what) = match stream {
            Stream::Stdout => (&mut self.stdout, "stdout"),
            Stream::Stderr => (&mut self.stderr, "stderr"),
        };
        let size = buf.len() + bytes.len();
        if size > self.max_output {
            return Err(Stop::Output {
                what,
                size: size as u64,
                limit: self.max_output as u64,
            });
        }
        buf.extend_from_slice(bytes);
        Ok(())
    }
}

impl ResourceLimiter for HostState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            // The grow fails (memory.grow returns -1): Go's runtime then
            // reports "out of memory" and exits; the run reports the limit.
            self.denied_memory = Some(self.denied_memory.map_or(desired, |d| d.max(desired)));
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

// ------------------------------------------------------------- memory --

fn fault(what: &str, addr: u64) -> Stop {
    Stop::Fault(format!(
        "{what} at address {addr} is outside the module's memory"
    ))
}

fn range(mem: &[u8], addr: u64, len: u64) -> Result<std::ops::Range<usize>, Stop> {
    let end = addr.checked_add(len).ok_or_else(|| fault("access", addr))?;
    if end > mem.len() as u64 {
        return Err(fault("access", addr));
    }
    Ok(addr as usize..end as usize)
}

fn read<const N: usize>(mem: &[u8], addr: u64) -> Result<[u8; N], Stop> {
    let r = range(mem, addr, N as u64)?;
    let mut out = [0; N];
    out.copy_from_slice(&mem[r]);
    Ok(out)
}

fn write_bytes(mem: &mut [u8], addr: u64, bytes: &[u8]) -> Result<(), Stop> {
    let r = range(mem, addr, bytes.len() as u64)?;
    mem[r].copy_from_slice(bytes);
    Ok(())
}

fn get_u32(mem: &[u8], addr: u64) -> Result<u32, Stop> {
    Ok(u32::from_le_bytes(read(mem, addr)?))
}

fn get_i32(mem: &[u8], addr: u64) -> Result<i32, Stop> {
    Ok(i32::from_le_bytes(read(mem, addr)?))
}

/// `getInt64`: low word unsigned plus high word signed × 2³².
fn get_i64(mem: &[u8], addr: u64) -> Result<i64, Stop> {
    Ok(i64::from_le_bytes(read(mem, addr)?))
}

fn set_u8(mem: &mut [u8], addr: u64, v: u8) -> Result<(), Stop> {
    write_bytes(mem, addr, &[v])
}

fn set_i32(mem: &mut [u8], addr: u64, v: i32) -> Result<(), Stop> {
    write_bytes(mem, addr, &v.to_le_bytes())
}

fn set_i64(mem: &mut [u8], addr: u64, v: i64) -> Result<(), Stop> {
    write_bytes(mem, addr, &v.to_le_bytes())
}

/// A Go slice or string header at `addr` (`ptr`, `len`) as a range.
fn load_slice(mem: &[u8], addr: u64) -> Result<std::ops::Range<usize>, Stop> {
    let ptr = get_i64(mem, addr)?;
    let len = get_i64(mem, addr + 8)?;
    let (Ok(ptr), Ok(len)) = (u64::try_from(ptr), u64::try_from(len)) else {
        return Err(fault("slice", addr));
    };
    range(mem, ptr, len)
}

/// A Go string at `addr`, decoded like `TextDecoder` (invalid UTF-8
/// becomes U+FFFD), refused above the output limit.
fn load_string(mem: &[u8], addr: u64, max: usize) -> Result<String, Stop> {
    let len = get_i64(mem, addr + 8)?;
    if len > max as i64 {
        return Err(Stop::Output {
            what: "a string",
            size: len as u64,
            limit: max as u64,
        });
    }
    let r = load_slice(mem, addr)?;
    Ok(String::from_utf8_lossy(&mem[r]).into_owned())
}

/// `loadValue`.
fn load_value(mem: &[u8], js: &Js, addr: u64) -> Result<Val, Stop> {
    let bits = u64::from_le_bytes(read(mem, addr)?);
    let f = f64::from_bits(bits);
    if f == 0.0 {
        return Ok(Val::Undefined);
    }
    if !f.is_nan() {
        return Ok(Val::Num(f));
    }
    Ok(js.value(bits as u32))
}

/// `loadSliceOfValues`.
fn load_values(mem: &[u8], js: &Js, addr: u64) -> Result<Vec<Val>, Stop> {
    let r = load_slice(mem, addr)?;
    let (start, len) = (r.start as u64, r.len() as u64);
    // A slice of refs: `len` counts elements of 8 bytes.
    range(mem, start, len.saturating_mul(8))?;
    (0..len)
        .map(|i| load_value(mem, js, start + i * 8))
        .collect()
}

/// `storeValue`.
fn store_value(mem: &mut [u8], js: &mut Js, addr: u64, v: &Val) -> Result<(), Stop> {
    range(mem, addr, 8)?;
    match v {
        Val::Num(n) if *n != 0.0 => {
            if n.is_nan() {
                write_bytes(mem, addr, &0u32.to_le_bytes())?;
                write_bytes(mem, addr + 4, &NAN_HEAD.to_le_bytes())
            } else {
                write_bytes(mem, addr, &n.to_le_bytes())
            }
        }
        Val::Undefined => write_bytes(mem, addr, &0f64.to_le_bytes()),
        _ => {
            let (id, flag) = js.reference(v);
            write_bytes(mem, addr, &id.to_le_bytes())?;
            write_bytes(mem, addr + 4, &(NAN_HEAD | flag).to_le_bytes())
        }
    }
}

type Cx<'a, 'b> = &'a mut Caller<'b, HostState>;

fn mem_state<'a>(
    caller: &'a mut Caller<'_, HostState>,
) -> Result<(&'a mut [u8], &'a mut HostState), Stop> {
    let memory = caller
        .data()
        .memory
        .ok_or_else(|| Stop::Fault("the module's memory is not set up".into()))?;
    Ok(memory.data_and_store_mut(caller))
}

/// `sp`, or a fresh `getsp()` if Go code ran since `entries` was read.
fn fresh_sp(caller: Cx<'_, '_>, sp: u64, entries: u64) -> Result<u64, Abort> {
    if caller.data().exited.is_some() {
        return Err(Stop::Exited.into());
    }
    if caller.data().entries == entries {
        return Ok(sp);
    }
    let getsp = caller
        .data()
        .getsp
        .clone()
        .ok_or_else(|| Stop::Fault("getsp is not set up".into()))?;
    let sp = getsp.call(&mut *caller, ()).map_err(Abort::Nested)?;
    Ok(u64::from(sp as u32))
}

// ------------------------------------------------------------ imports --

type Import = for<'a, 'b> fn(Cx<'a, 'b>, u64) -> Result<(), Abort>;

/// Every import, by name (the same under `gojs` and `go`).
const IMPORTS: &[(&str, Import)] = &[
    ("runtime.wasmExit", wasm_exit),
    ("runtime.wasmWrite", wasm_write),
    ("runtime.resetMemoryDataView", |_, _| Ok(())),
    ("runtime.nanotime1", nanotime1),
    ("runtime.walltime", walltime),
    ("runtime.scheduleTimeoutEvent", schedule_timeout_event),
    ("runtime.clearTimeoutEvent", clear_timeout_event),
    ("runtime.getRandomData", get_random_data),
    ("syscall/js.finalizeRef", finalize_ref),
    ("syscall/js.stringVal", string_val),
    ("syscall/js.valueGet", value_get),
    ("syscall/js.valueSet", value_set),
    ("syscall/js.valueDelete", value_delete),
    ("syscall/js.valueIndex", value_index),
    ("syscall/js.valueSetIndex", value_set_index),
    ("syscall/js.valueCall", value_call),
    ("syscall/js.valueInvoke", value_invoke),
    ("syscall/js.valueNew", value_new),
    ("syscall/js.valueLength", value_length),
    ("syscall/js.valuePrepareString", value_prepare_string),
    ("syscall/js.valueLoadString", value_load_string),
    ("syscall/js.valueInstanceOf", value_instance_of),
    ("syscall/js.copyBytesToGo", copy_bytes_to_go),
    ("syscall/js.copyBytesToJS", copy_bytes_to_js),
    ("debug", debug),
];

/// Defines every import under `gojs` and `go`.
pub(crate) fn define_imports(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    for module in ["gojs", "go"] {
        for (name, f) in IMPORTS {
            let f = *f;
            linker.func_wrap(
                module,
                name,
                move |mut caller: Caller<'_, HostState>, sp: i32| -> wasmtime::Result<()> {
                    match f(&mut caller, u64::from(sp as u32)) {
                        Ok(()) => Ok(()),
                        Err(Abort::Nested(e)) => Err(e),
                        Err(Abort::Stop(stop)) => {
                            let message = stop.to_string();
                            let state = caller.data_mut();
                            if state.stop.is_none() {
                                state.stop = Some(stop);
                            }
                            Err(wasmtime::Error::msg(message))
                        }
                    }
                },
            )?;
        }
    }
    Ok(())
}

fn wasm_exit(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let code = get_i32(mem, sp + 8)?;
    tracing::debug!(code, "Go program exited");
    st.exited = Some(code);
    Ok(())
}

fn wasm_write(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let fd = get_i64(mem, sp + 8)?;
    let p = get_i64(mem, sp + 16)?;
    let n = get_i32(mem, sp + 24)?;
    let (Ok(p), Ok(n)) = (u64::try_from(p), u64::try_from(n)) else {
        return Err(fault("wasmWrite buffer", sp).into());
    };
    let r = range(mem, p, n)?;
    match fd {
        1 => st.write(Stream::Stdout, &mem[r])?,
        2 => st.write(Stream::Stderr, &mem[r])?,
        _ => tracing::debug!(fd, "write to an unknown file descriptor ignored"),
    }
    Ok(())
}

fn nanotime1(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    set_i64(mem, sp + 8, (st.clock.now_ms_precise() * 1e6) as i64)?;
    Ok(())
}

fn walltime(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let msec = st.clock.now_ms() as i64;
    set_i64(mem, sp + 8, msec / 1000)?;
    set_i32(mem, sp + 16, ((msec % 1000) * 1_000_000) as i32)?;
    Ok(())
}

fn schedule_timeout_event(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let delay_ms = get_i64(mem, sp + 8)?.max(0) as u64;
    let id = st.next_timer;
    st.next_timer = st.next_timer.wrapping_add(1).max(1);
    let due_ns = st
        .clock
        .elapsed_ns()
        .saturating_add(delay_ms.saturating_mul(1_000_000));
    st.timers.insert(
        id,
        Timer {
            due_ns,
            fired: false,
        },
    );
    set_i32(mem, sp + 16, id)?;
    Ok(())
}

fn clear_timeout_event(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let id = get_i32(mem, sp + 8)?;
    st.timers.remove(&id);
    Ok(())
}

fn fill_random(buf: &mut [u8]) {
    if let Err(e) = getrandom::fill(buf) {
        tracing::warn!(error = %e, "no random data from the operating system");
    }
}

fn get_random_data(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, _) = mem_state(caller)?;
    let r = load_slice(mem, sp + 8)?;
    fill_random(&mut mem[r]);
    Ok(())
}

fn finalize_ref(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let id = get_u32(mem, sp + 8)?;
    st.js.finalize(id);
    Ok(())
}

fn string_val(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let s = load_string(mem, sp + 8, st.max_output)?;
    st.js.charge(s.len() as u64)?;
    store_value(mem, &mut st.js, sp + 24, &Val::Str(s.into()))?;
    Ok(())
}

/// An exception no `try` of `wasm_exec.js` catches.
fn uncaught(st: &HostState, exception: &Val) -> Abort {
    Stop::Exception(st.js.to_string(exception)).into()
}

fn value_get(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let name = load_string(mem, sp + 16, st.max_output)?;
    let result = match st.js.get(&v, &name)? {
        Ok(r) => r,
        Err(e) => return Err(uncaught(st, &e)),
    };
    store_value(mem, &mut st.js, sp + 32, &result)?;
    Ok(())
}

fn value_set(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let name = load_string(mem, sp + 16, st.max_output)?;
    let x = load_value(mem, &st.js, sp + 32)?;
    if let Err(e) = st.js.set(&v, &name, x)? {
        return Err(uncaught(st, &e));
    }
    Ok(())
}

fn value_delete(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let name = load_string(mem, sp + 16, st.max_output)?;
    if let Err(e) = st.js.delete(&v, &name)? {
        return Err(uncaught(st, &e));
    }
    Ok(())
}

fn value_index(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let i = get_i64(mem, sp + 16)?;
    let result = match st.js.get_index(&v, i)? {
        Ok(r) => r,
        Err(e) => return Err(uncaught(st, &e)),
    };
    store_value(mem, &mut st.js, sp + 24, &result)?;
    Ok(())
}

fn value_set_index(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let i = get_i64(mem, sp + 16)?;
    let x = load_value(mem, &st.js, sp + 24)?;
    if let Err(e) = st.js.set_index(&v, i, x)? {
        return Err(uncaught(st, &e));
    }
    Ok(())
}

/// Stores a call's outcome at `result_at` and its success flag 8 bytes
/// later, at a fresh `sp` if Go code ran meanwhile.
fn store_outcome(
    caller: Cx<'_, '_>,
    sp: u64,
    entries: u64,
    result_at: u64,
    outcome: Result<Val, Val>,
) -> Result<(), Abort> {
    let sp = fresh_sp(caller, sp, entries)?;
    let (mem, st) = mem_state(caller)?;
    let (v, ok) = match outcome {
        Ok(v) => (v, 1),
        Err(e) => (e, 0),
    };
    store_value(mem, &mut st.js, sp + result_at, &v)?;
    set_u8(mem, sp + result_at + 8, ok)?;
    Ok(())
}

fn value_call(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let entries = caller.data().entries;
    let (v, name, args) = {
        let (mem, st) = mem_state(caller)?;
        (
            load_value(mem, &st.js, sp + 8)?,
            load_string(mem, sp + 16, st.max_output)?,
            load_values(mem, &st.js, sp + 32)?,
        )
    };
    let outcome = match caller.data_mut().js.get(&v, &name)? {
        Ok(m) => call(&mut caller.as_context_mut(), &m, &v, args, false)?,
        Err(e) => Err(e),
    };
    store_outcome(caller, sp, entries, 56, outcome)
}

fn value_invoke(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let entries = caller.data().entries;
    let (v, args) = {
        let (mem, st) = mem_state(caller)?;
        (
            load_value(mem, &st.js, sp + 8)?,
            load_values(mem, &st.js, sp + 16)?,
        )
    };
    let outcome = call(
        &mut caller.as_context_mut(),
        &v,
        &Val::Undefined,
        args,
        false,
    )?;
    store_outcome(caller, sp, entries, 40, outcome)
}

fn value_new(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let entries = caller.data().entries;
    let (v, args) = {
        let (mem, st) = mem_state(caller)?;
        (
            load_value(mem, &st.js, sp + 8)?,
            load_values(mem, &st.js, sp + 16)?,
        )
    };
    let outcome = call(
        &mut caller.as_context_mut(),
        &v,
        &Val::Undefined,
        args,
        true,
    )?;
    store_outcome(caller, sp, entries, 40, outcome)
}

fn value_length(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let n = match st.js.length(&v)? {
        Ok(n) => n,
        Err(e) => return Err(uncaught(st, &e)),
    };
    set_i64(mem, sp + 16, n)?;
    Ok(())
}

fn value_prepare_string(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let s: std::sync::Arc<str> = match v {
        Val::Str(s) => s,
        v => {
            let s = st.js.to_string_limited(&v, st.max_output.saturating_add(1));
            if s.len() > st.max_output {
                return Err(Stop::Output {
                    what: "a string",
                    size: s.len() as u64,
                    limit: st.max_output as u64,
                }
                .into());
            }
            st.js.charge(s.len() as u64)?;
            s.into()
        }
    };
    let len = s.len();
    let bytes = st.js.alloc(js::Kind::StrBytes(s))?;
    store_value(mem, &mut st.js, sp + 16, &Val::Obj(bytes))?;
    set_i64(mem, sp + 24, len as i64)?;
    Ok(())
}

fn value_load_string(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let r = load_slice(mem, sp + 16)?;
    let Some(src) = st.js.bytes(&v) else {
        return Err(Stop::Exception(
            "TypeError: valueLoadString of a value that is not a Uint8Array".into(),
        )
        .into());
    };
    if src.len() > r.len() {
        return Err(Stop::Exception("RangeError: offset is out of bounds".into()).into());
    }
    let start = r.start;
    mem[start..start + src.len()].copy_from_slice(src);
    Ok(())
}

fn value_instance_of(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let v = load_value(mem, &st.js, sp + 8)?;
    let t = load_value(mem, &st.js, sp + 16)?;
    let yes = match st.js.instance_of(&v, &t)? {
        Ok(b) => b,
        Err(e) => return Err(uncaught(st, &e)),
    };
    set_u8(mem, sp + 24, u8::from(yes))?;
    Ok(())
}

fn copy_bytes_to_go(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let dst = load_slice(mem, sp + 8)?;
    let src = load_value(mem, &st.js, sp + 32)?;
    let Some(src) = st.js.bytes(&src) else {
        set_u8(mem, sp + 48, 0)?;
        return Ok(());
    };
    let n = src.len().min(dst.len());
    mem[dst.start..dst.start + n].copy_from_slice(&src[..n]);
    set_i64(mem, sp + 40, n as i64)?;
    set_u8(mem, sp + 48, 1)?;
    Ok(())
}

fn copy_bytes_to_js(caller: Cx<'_, '_>, sp: u64) -> Result<(), Abort> {
    let (mem, st) = mem_state(caller)?;
    let dst = load_value(mem, &st.js, sp + 8)?;
    let src = load_slice(mem, sp + 16)?;
    let Some(dst) = st.js.bytes_mut(&dst) else {
        set_u8(mem, sp + 48, 0)?;
        return Ok(());
    };
    let n = src.len().min(dst.len());
    dst[..n].copy_from_slice(&mem[src.start..src.start + n]);
    set_i64(mem, sp + 40, n as i64)?;
    set_u8(mem, sp + 48, 1)?;
    Ok(())
}

fn debug(_caller: Cx<'_, '_>, value: u64) -> Result<(), Abort> {
    tracing::debug!(value, "Go runtime debug");
    Ok(())
}

// ------------------------------------------------------------ natives --

/// `Reflect.apply(f, this, args)`, or `Reflect.construct(f, args)` with
/// `construct`: `Ok(Err(exception))` when it throws.
fn call(
    cx: &mut StoreContextMut<'_, HostState>,
    f: &Val,
    this: &Val,
    args: Vec<Val>,
    construct: bool,
) -> Result<Result<Val, Val>, Abort> {
    let st = cx.data_mut();
    let Some(native) = st.js.native(f) else {
        let what = st.js.type_of(f);
        return Ok(Err(st.js.type_error(&format!(
            "a value of type {what} is not a function"
        ))?));
    };
    if construct && !Js::is_constructor(native) {
        return Ok(Err(st
            .js
            .type_error("the function is not a constructor")?));
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Val::Undefined);
    match native {
        Native::GoFunc(id) => call_go(cx, id, this, args),
        Native::FsWriteSync => {
            let fd = js::to_number(&arg(0));
            let stream = if fd == 1.0 {
                Stream::Stdout
            } else if fd == 2.0 {
                Stream::Stderr
            } else {
                return Ok(Err(st.js.enosys()?));
            };
            let Some(bytes) = st.js.bytes(&arg(1)).map(<[u8]>::to_vec) else {
                return Ok(Err(st
                    .js
                    .type_error("writeSync: the buffer is not a Uint8Array")?));
            };
            st.write(stream, &bytes)?;
            Ok(Ok(Val::Num(bytes.len() as f64)))
        }
        Native::FsWrite => {
            let fd = js::to_number(&arg(0));
            let buf = st.js.bytes(&arg(1)).map(<[u8]>::to_vec);
            let whole = matches!((&buf, arg(2), arg(3), arg(4)),
                (Some(b), Val::Num(o), Val::Num(l), Val::Null) if o == 0.0 && l == b.len() as f64);
            let callback_args = match buf {
                Some(b) if whole && (fd == 1.0 || fd == 2.0) => {
                    let stream = if fd == 1.0 {
                        Stream::Stdout
                    } else {
                        Stream::Stderr
                    };
                    st.write(stream, &b)?;
                    vec![Val::Null, Val::Num(b.len() as f64)]
                }
                _ => vec![st.js.enosys()?],
            };
            match call(cx, &arg(5), &Val::Undefined, callback_args, false)? {
                Ok(_) => Ok(Ok(Val::Undefined)),
                Err(e) => Ok(Err(e)),
            }
        }
        Native::FsEnosys | Native::FsOk => {
            let callback = args.last().cloned().unwrap_or(Val::Undefined);
            let callback_args = if native == Native::FsOk {
                vec![Val::Null]
            } else {
                vec![st.js.enosys()?]
            };
            match call(cx, &callback, &Val::Undefined, callback_args, false)? {
                Ok(_) => Ok(Ok(Val::Undefined)),
                Err(e) => Ok(Err(e)),
            }
        }
        Native::Console(stream) => {
            let mut line = args
                .iter()
                .map(|a| st.js.to_string(a))
                .collect::<Vec<_>>()
                .join(" ");
            line.push('\n');
            st.write(stream, line.as_bytes())?;
            Ok(Ok(Val::Undefined))
        }
        _ => {
            let now = st.clock.now_ms();
            Ok(st.js.call_simple(native, &args, now, &mut fill_random)?)
        }
    }
}

/// Calls the Go function registered as `id` (`_makeFuncWrapper`): sets
/// `go._pendingEvent = {id, this, args}`, resumes the program and returns
/// `event.result`.
fn call_go(
    cx: &mut StoreContextMut<'_, HostState>,
    id: f64,
    this: &Val,
    args: Vec<Val>,
) -> Result<Result<Val, Val>, Abort> {
    let st = cx.data_mut();
    if st.exited.is_some() {
        return Ok(Err(st.js.error("Go program has already exited", None)?));
    }
    let args = st.js.array(args)?;
    let event = st.js.object()?;
    let ev = Val::Obj(event);
    st.js.set(&ev, "id", Val::Num(id))?.ok();
    st.js.set(&ev, "this", this.clone())?.ok();
    st.js.set(&ev, "args", args)?.ok();
    let go = Val::Obj(st.js.go());
    st.js.set(&go, "_pendingEvent", ev)?.ok();
    resume(cx)?;
    Ok(Ok(cx.data().js.get_prop(event, "result")))
}

/// `_resume()`: runs Go's `resume` export.
fn resume(cx: &mut StoreContextMut<'_, HostState>) -> Result<(), Abort> {
    let resume = cx
        .data()
        .resume
        .clone()
        .ok_or_else(|| Stop::Fault("resume is not set up".into()))?;
    cx.data_mut().entries += 1;
    resume.call(&mut *cx, ()).map_err(Abort::Nested)
}

// ------------------------------------------------------------- driver --

/// Runs the module: `run`, the timers it needs until it registered
/// `processResourceList`, then `processResourceList(resource_list)`.
pub(crate) fn execute(
    pre: &InstancePre<HostState>,
    module: &str,
    resource_list: &str,
    limits: &Limits,
) -> Result<FnRun, WasmFnError> {
    let started = Instant::now();
    let engine = pre.module().engine().clone();
    let mut store = Store::new(&engine, HostState::new(limits));
    store.limiter(|s| s as &mut dyn ResourceLimiter);
    let fuel = limits.fuel.unwrap_or(u64::MAX);
    store
        .set_fuel(fuel)
        .map_err(|e| WasmFnError::Setup(format!("setting fuel: {e}")))?;
    let ticks = limits.timeout.map_or(u64::MAX, |t| {
        (t.as_nanos() / EPOCH_TICK.as_nanos()).max(1) as u64 + 1
    });
    store.set_epoch_deadline(ticks);
    store.epoch_deadline_trap();

    let mut run = Run {
        store,
        module,
        limits,
        started,
        fuel,
    };
    let output = run.go(pre, resource_list)?;
    let fuel_used = limits
        .fuel
        .map(|f| f.saturating_sub(run.store.get_fuel().unwrap_or(0)));
    let st = run.store.data();
    tracing::debug!(
        module,
        elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
        fuel_used,
        output_bytes = output.len(),
        "wasm function ran"
    );
    Ok(FnRun {
        output,
        stdout: String::from_utf8_lossy(&st.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&st.stderr).into_owned(),
        fuel_used,
        elapsed: started.elapsed(),
    })
}

struct Run<'a> {
    store: Store<HostState>,
    module: &'a str,
    limits: &'a Limits,
    started: Instant,
    fuel: u64,
}

impl Run<'_> {
    fn go(
        &mut self,
        pre: &InstancePre<HostState>,
        resource_list: &str,
    ) -> Result<String, WasmFnError> {
        let module = self.module.to_string();
        let instance = pre.instantiate(&mut self.store).map_err(|e| {
            self.limit_error()
                .unwrap_or_else(|| WasmFnError::Instantiate {
                    module: module.clone(),
                    reason: format!("{e:#}"),
                })
        })?;
        let not_go = |reason: String| WasmFnError::NotGoJs {
            module: module.clone(),
            reason,
        };
        let memory = instance
            .get_memory(&mut self.store, "mem")
            .ok_or_else(|| not_go("no memory export named mem".into()))?;
        let getsp = instance
            .get_typed_func::<(), i32>(&mut self.store, "getsp")
            .map_err(|e| not_go(format!("export getsp: {e}")))?;
        let resume = instance
            .get_typed_func::<(), ()>(&mut self.store, "resume")
            .map_err(|e| not_go(format!("export resume: {e}")))?;
        let run = instance
            .get_typed_func::<(i32, i32), ()>(&mut self.store, "run")
            .map_err(|e| not_go(format!("export run: {e}")))?;
        {
            let st = self.store.data_mut();
            st.memory = Some(memory);
            st.getsp = Some(getsp);
            st.resume = Some(resume);
        }

        // argv ["js"], no environment, as wasm_exec.js writes them.
        let mem = memory.data_mut(&mut self.store);
        if (mem.len() as u64) < MIN_DATA_ADDR {
            return Err(not_go(format!(
                "memory of {} bytes is smaller than the {MIN_DATA_ADDR} bytes argv needs",
                mem.len()
            )));
        }
        let arg = b"js\0\0\0\0\0\0";
        mem[ARGV_OFFSET as usize..ARGV_OFFSET as usize + 8].copy_from_slice(arg);
        let argv = ARGV_OFFSET + 8;
        for (i, ptr) in [ARGV_OFFSET, 0, 0].into_iter().enumerate() {
            let at = argv as usize + i * 8;
            mem[at..at + 8].copy_from_slice(&ptr.to_le_bytes());
        }
        self.store.data_mut().entries += 1;
        run.call(&mut self.store, (1, argv as i32))
            .map_err(|e| self.call_error(&e))?;
        if let Some(e) = self.limit_error() {
            return Err(e);
        }

        // Until the program registered its function: fire timers.
        let function = loop {
            if let Some(code) = self.store.data().exited {
                return Err(self.exited(code));
            }
            let st = self.store.data();
            let global = st.js.global();
            let f = st.js.get_prop(global, "processResourceList");
            if st.js.is_function(&f) {
                break f;
            }
            if !self.fire_timer()? {
                return Err(WasmFnError::NotRegistered {
                    module,
                    stderr: self.stderr(),
                });
            }
        };

        let input = Val::str(resource_list);
        let result = self.call_function(&function, input.clone())?;
        let output = match result {
            Val::Str(s) => s.to_string(),
            other => {
                if let Some(code) = self.store.data().exited {
                    return Err(self.exited(code));
                }
                return Err(WasmFnError::BadResult {
                    module,
                    got: self.store.data().js.type_of(&other).to_string(),
                });
            }
        };
        self.collect_printed()?;
        if output.contains("kind: ResourceList") {
            return Ok(output);
        }
        // kpt's rule: not a ResourceList means failure; the message comes
        // from processResourceListErrors.
        let st = self.store.data();
        let errors = st.js.get_prop(st.js.global(), "processResourceListErrors");
        let mut message = String::new();
        if st.js.is_function(&errors) && st.exited.is_none() {
            if let Ok(Val::Str(m)) = self.call_function(&errors, input) {
                message = m.to_string();
            }
        }
        if message.trim().is_empty() {
            message = output.clone();
        }
        Err(WasmFnError::FunctionFailed {
            module,
            message,
            output,
            stderr: self.stderr(),
        })
    }

    /// Appends what `processResourceListStderr()` returns, when the module
    /// registered it (this project's modules: what the function printed,
    /// e.g. starlark's `print()`), to the run's stderr.
    fn collect_printed(&mut self) -> Result<(), WasmFnError> {
        let st = self.store.data();
        if st.exited.is_some() {
            return Ok(());
        }
        let f = st.js.get_prop(st.js.global(), "processResourceListStderr");
        if !st.js.is_function(&f) {
            return Ok(());
        }
        if let Val::Str(text) = self.call_function(&f, Val::str(""))? {
            let text = text.to_string();
            if let Err(stop) = self.store.data_mut().write(Stream::Stderr, text.as_bytes()) {
                self.store.data_mut().stop = Some(stop);
                if let Some(e) = self.limit_error() {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Calls a registered function with one string argument from the top
    /// level (no import running).
    fn call_function(&mut self, f: &Val, arg: Val) -> Result<Val, WasmFnError> {
        let outcome = call(
            &mut self.store.as_context_mut(),
            f,
            &Val::Undefined,
            vec![arg],
            false,
        );
        match outcome {
            Ok(Ok(v)) => {
                if let Some(e) = self.limit_error() {
                    return Err(e);
                }
                Ok(v)
            }
            Ok(Err(exception)) => {
                if let Some(code) = self.store.data().exited {
                    return Err(self.exited(code));
                }
                Err(WasmFnError::JsException {
                    module: self.module.to_string(),
                    message: self.store.data().js.to_string(&exception),
                    stderr: self.stderr(),
                })
            }
            Err(Abort::Nested(e)) => Err(self.call_error(&e)),
            Err(Abort::Stop(stop)) => {
                self.store.data_mut().stop.get_or_insert(stop);
                Err(self.call_error(&wasmtime::Error::msg("stopped")))
            }
        }
    }

    /// Fires the earliest timer that has not fired (waiting for it, or on
    /// the virtual clock skipping ahead); `false` when none is pending.
    fn fire_timer(&mut self) -> Result<bool, WasmFnError> {
        let st = self.store.data();
        let Some((&id, timer)) = st
            .timers
            .iter()
            .filter(|(_, t)| !t.fired)
            .min_by_key(|(id, t)| (t.due_ns, **id))
        else {
            return Ok(false);
        };
        let now = st.clock.elapsed_ns();
        if timer.due_ns > now {
            let wait = Duration::from_nanos(timer.due_ns - now);
            match st.clock.mode {
                ClockMode::Virtual => {
                    self.store.data_mut().clock.skipped_ns += wait.as_nanos() as u64
                }
                ClockMode::Real => {
                    let left = self
                        .limits
                        .timeout
                        .map(|t| t.saturating_sub(self.started.elapsed()));
                    if let Some(left) = left {
                        if wait > left {
                            std::thread::sleep(left);
                            return Err(self.timeout());
                        }
                    }
                    std::thread::sleep(wait);
                }
            }
        }
        if let Some(t) = self.store.data_mut().timers.get_mut(&id) {
            t.fired = true;
        }
        for _ in 0..MAX_MISSED_TIMEOUTS {
            if self.store.data().exited.is_some() {
                return Ok(true);
            }
            match resume(&mut self.store.as_context_mut()) {
                Ok(()) => {}
                Err(Abort::Nested(e)) => return Err(self.call_error(&e)),
                Err(Abort::Stop(stop)) => {
                    self.store.data_mut().stop.get_or_insert(stop);
                    return Err(self.call_error(&wasmtime::Error::msg("stopped")));
                }
            }
            if let Some(e) = self.limit_error() {
                return Err(e);
            }
            if !self.store.data().timers.contains_key(&id) {
                return Ok(true);
            }
            tracing::debug!(id, "scheduleTimeoutEvent: missed timeout event");
        }
        Err(WasmFnError::Trap {
            module: self.module.to_string(),
            message: format!("timer {id} stayed scheduled after {MAX_MISSED_TIMEOUTS} resumes"),
            stderr: self.stderr(),
        })
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.store.data().stderr).into_owned()
    }

    fn exited(&self, code: i32) -> WasmFnError {
        self.limit_error().unwrap_or_else(|| WasmFnError::Exited {
            module: self.module.to_string(),
            code,
            stderr: self.stderr(),
        })
    }

    fn timeout(&self) -> WasmFnError {
        WasmFnError::Timeout {
            module: self.module.to_string(),
            after: self.limits.timeout.unwrap_or_default(),
        }
    }

    /// A limit that was hit (memory denied, output, host allocations),
    /// whatever the module made of it.
    fn limit_error(&self) -> Option<WasmFnError> {
        let st = self.store.data();
        let module = self.module.to_string();
        if let Some(requested) = st.denied_memory {
            return Some(WasmFnError::MemoryLimit {
                module,
                requested: requested as u64,
                limit: st.max_memory as u64,
            });
        }
        match &st.stop {
            Some(Stop::Output { what, size, limit }) => Some(WasmFnError::OutputTooLarge {
                module,
                what: (*what).to_string(),
                size: *size,
                limit: *limit,
            }),
            Some(Stop::HostMemory) => Some(WasmFnError::HostMemoryLimit {
                module,
                limit: st.js.max_allocated(),
            }),

            _ => None,
        }
    }

    /// The error of a call into the module that failed.
    fn call_error(&self, e: &wasmtime::Error) -> WasmFnError {
        if let Some(limit) = self.limit_error() {
            return limit;
        }
        let st = self.store.data();
        let module = self.module.to_string();
        match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => {
                return WasmFnError::OutOfFuel {
                    module,
                    fuel: self.fuel,
                }
            }
            Some(Trap::Interrupt) => return self.timeout(),
            _ => {}
        }
        if let Some(code) = st.exited {
            return self.exited(code);
        }
        match &st.stop {
            Some(Stop::Exception(message)) => WasmFnError::JsException {
                module,
                message: message.clone(),
                stderr: self.stderr(),
            },
            Some(stop) => WasmFnError::Trap {
                module,
                message: stop.to_string(),
                stderr: self.stderr(),
            },
            None => WasmFnError::Trap {
                module,
                message: format!("{e:#}"),
                stderr: self.stderr(),
            },
        }
    }
}
