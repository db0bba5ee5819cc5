//! The JavaScript side a Go `GOOS=js GOARCH=wasm` program sees: values,
//! a heap of objects, the reference table of `wasm_exec.js`
//! (`_values`/`_goRefCounts`/`_ids`/`_idPool`) and the globals Go's
//! runtime and standard library touch.
//!
//! Only what Go's `syscall/js`, `syscall` (`fs_js.go`), `os`, `time`,
//! `crypto/rand` and ordinary `js.Global()` use is modelled: plain
//! objects, arrays, `Uint8Array`s, errors, dates and native functions.
//! Objects live as long as the run: the heap is dropped with the store,
//! and what the module makes the host allocate is bounded by
//! [`Js::charge`].

use std::collections::HashMap;
use std::sync::Arc;

/// A heap object's index.
pub(crate) type ObjId = u32;

/// A JavaScript value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Arc<str>),
    Obj(ObjId),
}

impl Val {
    pub(crate) fn str(s: &str) -> Val {
        Val::Str(Arc::from(s))
    }
}

/// Which stream a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// A function implemented by the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Native {
    /// A Go function made by `go._makeFuncWrapper(id)`.
    GoFunc(f64),
    MakeFuncWrapper,
    ObjectCtor,
    ArrayCtor,
    Uint8ArrayCtor,
    ErrorCtor,
    DateCtor,
    DateNow,
    DateGetTime,
    DateGetTimezoneOffset,
    FsWriteSync,
    FsWrite,
    /// `fs.<op>(…, callback)` that calls back with ENOSYS.
    FsEnosys,
    /// `fs.fsync(fd, callback)`: calls back with no error.
    FsOk,
    /// `process.getuid()` and friends: -1.
    MinusOne,
    /// `process.getgroups()`, `umask`, `chdir`: throws ENOSYS.
    ThrowEnosys,
    ProcessCwd,
    GetRandomValues,
    Console(Stream),
}

/// What an object is.
#[derive(Debug)]
pub(crate) enum Kind {
    Plain,
    Array(Vec<Val>),
    /// A `Uint8Array`.
    Bytes(Vec<u8>),
    /// A read-only `Uint8Array` holding a string's UTF-8 (what
    /// `valuePrepareString` makes; copied on first write).
    StrBytes(Arc<str>),
    Error,
    /// A `Date` (milliseconds since the epoch).
    Date(f64),
    Function(Native),
}

/// A heap object: its kind, own properties and the constructor it was
/// made with (for `instanceof`).
#[derive(Debug)]
pub(crate) struct Obj {
    pub(crate) kind: Kind,
    props: HashMap<Arc<str>, Val>,
    ctor: Option<ObjId>,
}

/// A value's identity in the reference table (`_ids`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Zero,
    Null,
    True,
    False,
    Obj(ObjId),
    Str(Arc<str>),
}

/// Reference ids `wasm_exec.js` predefines.
pub(crate) const ID_ZERO: u32 = 1;
pub(crate) const ID_NULL: u32 = 2;
pub(crate) const ID_TRUE: u32 = 3;
pub(crate) const ID_FALSE: u32 = 4;
pub(crate) const ID_GLOBAL: u32 = 5;
pub(crate) const ID_GO: u32 = 6;

/// High word of a NaN-boxed reference.
pub(crate) const NAN_HEAD: u32 = 0x7FF8_0000;

/// A reference count that never drops (the predefined values).
const PINNED: u64 = u64::MAX;

/// Rough host bytes of one object, array slot or property.
const OBJECT_BYTES: u64 = 64;
const SLOT_BYTES: u64 = 16;

/// Most elements of one array the module may ask for.
const MAX_ARRAY_LEN: usize = 1 << 22;

/// Longest `String(v)` made for a message (console, exceptions).
const MESSAGE_LIMIT: usize = 64 << 10;

/// The host allocation limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverLimit;

/// Shared function objects created once per run.
#[derive(Debug, Clone, Copy)]
struct Builtins {
    object: ObjId,
    array: ObjId,
    uint8array: ObjId,
    error: ObjId,
    date: ObjId,
    date_get_time: ObjId,
    date_get_timezone_offset: ObjId,
}

/// The JavaScript world of one run.
#[derive(Debug)]
pub(crate) struct Js {
    heap: Vec<Obj>,
    values: Vec<Val>,
    counts: Vec<u64>,
    ids: HashMap<Key, u32>,
    pool: Vec<u32>,
    builtins: Builtins,
    /// Bytes the module made the host allocate so far.
    allocated: u64,
    /// Most bytes it may.
    max_allocated: u64,
}

impl Js {
    /// A fresh world: `globalThis` (id 5) and the `Go` object (id 6) with
    /// the globals Go touches.
    pub(crate) fn new(max_allocated: u64) -> Js {
        let mut js = Js {
            heap: Vec::new(),
            values: Vec::new(),
            counts: Vec::new(),
            ids: HashMap::new(),
            pool: Vec::new(),
            builtins: Builtins {
                object: 0,
                array: 0,
                uint8array: 0,
                error: 0,
                date: 0,
                date_get_time: 0,
                date_get_timezone_offset: 0,
            },
            allocated: 0,
            max_allocated,
        };
        let global = js.alloc_unchecked(Kind::Plain);
        let go = js.alloc_unchecked(Kind::Plain);
        let func = |js: &mut Js, n: Native| js.alloc_unchecked(Kind::Function(n));

        let object = func(&mut js, Native::ObjectCtor);
        let array = func(&mut js, Native::ArrayCtor);
        let uint8array = func(&mut js, Native::Uint8ArrayCtor);
        let error = func(&mut js, Native::ErrorCtor);
        let date = func(&mut js, Native::DateCtor);
        let date_now = func(&mut js, Native::DateNow);
        js.set_prop_unchecked(date, "now", Val::Obj(date_now));
        let date_get_time = func(&mut js, Native::DateGetTime);
        let date_get_timezone_offset = func(&mut js, Native::DateGetTimezoneOffset);
        js.builtins = Builtins {
            object,
            array,
            uint8array,
            error,
            date,
            date_get_time,
            date_get_timezone_offset,
        };

        // fs: writes to fd 1 and 2 are captured; everything else fails
        // with ENOSYS, as in wasm_exec.js without node's fs.
        let fs = js.alloc_unchecked(Kind::Plain);
        let constants = js.alloc_unchecked(Kind::Plain);
        for c in [
            "O_WRONLY",
            "O_RDWR",
            "O_CREAT",
            "O_TRUNC",
            "O_APPEND",
            "O_EXCL",
            "O_DIRECTORY",
        ] {
            js.set_prop_unchecked(constants, c, Val::Num(-1.0));
        }
        js.set_prop_unchecked(fs, "constants", Val::Obj(constants));
        let write_sync = func(&mut js, Native::FsWriteSync);
        js.set_prop_unchecked(fs, "writeSync", Val::Obj(write_sync));
        let write = func(&mut js, Native::FsWrite);
        js.set_prop_unchecked(fs, "write", Val::Obj(write));
        let fsync = func(&mut js, Native::FsOk);
        js.set_prop_unchecked(fs, "fsync", Val::Obj(fsync));
        let enosys = func(&mut js, Native::FsEnosys);
        for op in [
            "chmod",
            "chown",
            "close",
            "fchmod",
            "fchown",
            "fstat",
            "ftruncate",
            "lchown",
            "link",
            "lstat",
            "mkdir",
            "open",
            "read",
            "readdir",
            "readlink",
            "rename",
            "rmdir",
            "stat",
            "symlink",
            "truncate",
            "unlink",
            "utimes",
        ] {
            js.set_prop_unchecked(fs, op, Val::Obj(enosys));
        }

        let process = js.alloc_unchecked(Kind::Plain);
        let minus_one = func(&mut js, Native::MinusOne);
        for f in ["getuid", "getgid", "geteuid", "getegid"] {
            js.set_prop_unchecked(process, f, Val::Obj(minus_one));
        }
        let throw_enosys = func(&mut js, Native::ThrowEnosys);
        for f in ["getgroups", "umask", "chdir"] {
            js.set_prop_unchecked(process, f, Val::Obj(throw_enosys));
        }
        let cwd = func(&mut js, Native::ProcessCwd);
        js.set_prop_unchecked(process, "cwd", Val::Obj(cwd));
        js.set_prop_unchecked(process, "pid", Val::Num(-1.0));
        js.set_prop_unchecked(process, "ppid", Val::Num(-1.0));

        let crypto = js.alloc_unchecked(Kind::Plain);
        let random = func(&mut js, Native::GetRandomValues);
        js.set_prop_unchecked(crypto, "getRandomValues", Val::Obj(random));

        let console = js.alloc_unchecked(Kind::Plain);
        let log = func(&mut js, Native::Console(Stream::Stdout));
        let err = func(&mut js, Native::Console(Stream::Stderr));
        js.set_prop_unchecked(console, "log", Val::Obj(log));
        js.set_prop_unchecked(console, "info", Val::Obj(log));
        js.set_prop_unchecked(console, "debug", Val::Obj(log));
        js.set_prop_unchecked(console, "error", Val::Obj(err));
        js.set_prop_unchecked(console, "warn", Val::Obj(err));

        for (name, v) in [
            ("Object", object),
            ("Array", array),
            ("Uint8Array", uint8array),
            ("Error", error),
            ("Date", date),
            ("fs", fs),
            ("process", process),
            ("crypto", crypto),
            ("console", console),
            ("globalThis", global),
        ] {
            js.set_prop_unchecked(global, name, Val::Obj(v));
        }

        let make = func(&mut js, Native::MakeFuncWrapper);
        js.set_prop_unchecked(go, "_makeFuncWrapper", Val::Obj(make));
        js.set_prop_unchecked(go, "_pendingEvent", Val::Null);

        // The reference table: NaN, 0, null, true, false, globalThis, go.
        js.values = vec![
            Val::Num(f64::NAN),
            Val::Num(0.0),
            Val::Null,
            Val::Bool(true),
            Val::Bool(false),
            Val::Obj(global),
            Val::Obj(go),
        ];
        js.counts = vec![PINNED; js.values.len()];
        js.ids = HashMap::from([
            (Key::Zero, ID_ZERO),
            (Key::Null, ID_NULL),
            (Key::True, ID_TRUE),
            (Key::False, ID_FALSE),
            (Key::Obj(global), ID_GLOBAL),
            (Key::Obj(go), ID_GO),
        ]);
        js
    }

    /// `globalThis`.
    pub(crate) fn global(&self) -> ObjId {
        0
    }

    /// The `Go` object (`_makeFuncWrapper`, `_pendingEvent`).
    pub(crate) fn go(&self) -> ObjId {
        1
    }

    // ------------------------------------------------------------ heap --

    /// Counts `bytes` against the host allocation limit.
    pub(crate) fn charge(&mut self, bytes: u64) -> Result<(), OverLimit> {
        self.allocated = self.allocated.saturating_add(bytes);
        if self.allocated > self.max_allocated {
            return Err(OverLimit);
        }
        Ok(())
    }

    /// The host allocation limit.
    pub(crate) fn max_allocated(&self) -> u64 {
        self.max_allocated
    }

    fn alloc_unchecked(&mut self, kind: Kind) -> ObjId {
        self.alloc_with_ctor(kind, None)
    }

    fn alloc_with_ctor(&mut self, kind: Kind, ctor: Option<ObjId>) -> ObjId {
        let id = u32::try_from(self.heap.len()).unwrap_or(u32::MAX);
        self.heap.push(Obj {
            kind,
            props: HashMap::new(),
            ctor,
        });
        id
    }

    /// A new object, charged against the limit (its contents are charged
    /// by the caller, before they are allocated).
    pub(crate) fn alloc(&mut self, kind: Kind) -> Result<ObjId, OverLimit> {
        self.charge(OBJECT_BYTES)?;
        let ctor = match &kind {
            Kind::Plain => Some(self.builtins.object),
            Kind::Array(_) => Some(self.builtins.array),
            Kind::Bytes(_) | Kind::StrBytes(_) => Some(self.builtins.uint8array),
            Kind::Error => Some(self.builtins.error),
            Kind::Date(_) => Some(self.builtins.date),
            Kind::Function(_) => None,
        };
        Ok(self.alloc_with_ctor(kind, ctor))
    }

    pub(crate) fn obj(&self, id: ObjId) -> Option<&Obj> {
        self.heap.get(id as usize)
    }

    fn obj_mut(&mut self, id: ObjId) -> Option<&mut Obj> {
        self.heap.get_mut(id as usize)
    }

    fn set_prop_unchecked(&mut self, id: ObjId, name: &str, v: Val) {
        if let Some(o) = self.obj_mut(id) {
            o.props.insert(Arc::from(name), v);
        }
    }

    /// The native function `v` is, if any.
    pub(crate) fn native(&self, v: &Val) -> Option<Native> {
        match v {
            Val::Obj(id) => match self.obj(*id)?.kind {
                Kind::Function(n) => Some(n),
                _ => None,
            },
            _ => None,
        }
    }

    /// The bytes of a `Uint8Array`.
    pub(crate) fn bytes(&self, v: &Val) -> Option<&[u8]> {
        match v {
            Val::Obj(id) => match &self.obj(*id)?.kind {
                Kind::Bytes(b) => Some(b),
                Kind::StrBytes(s) => Some(s.as_bytes()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The bytes of a `Uint8Array`, writable.
    pub(crate) fn bytes_mut(&mut self, v: &Val) -> Option<&mut Vec<u8>> {
        let Val::Obj(id) = v else { return None };
        let o = self.obj_mut(*id)?;
        if let Kind::StrBytes(s) = &o.kind {
            o.kind = Kind::Bytes(s.as_bytes().to_vec());
        }
        match &mut o.kind {
            Kind::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A new `Error` with `message` (and `code` when given).
    pub(crate) fn error(&mut self, message: &str, code: Option<&str>) -> Result<Val, OverLimit> {
        let id = self.alloc(Kind::Error)?;
        self.set_prop_unchecked(id, "message", Val::str(message));
        if let Some(code) = code {
            self.set_prop_unchecked(id, "code", Val::str(code));
        }
        Ok(Val::Obj(id))
    }

    /// The `ENOSYS` error of `wasm_exec.js` (`not implemented`).
    pub(crate) fn enosys(&mut self) -> Result<Val, OverLimit> {
        self.error("not implemented", Some("ENOSYS"))
    }

    /// A `TypeError` with `message`.
    pub(crate) fn type_error(&mut self, message: &str) -> Result<Val, OverLimit> {
        let e = self.error(message, None)?;
        if let Val::Obj(id) = e {
            self.set_prop_unchecked(id, "name", Val::str("TypeError"));
        }
        Ok(e)
    }

    /// A `RangeError` with `message`.
    pub(crate) fn range_error(&mut self, message: &str) -> Result<Val, OverLimit> {
        let e = self.error(message, None)?;
        if let Val::Obj(id) = e {
            self.set_prop_unchecked(id, "name", Val::str("RangeError"));
        }
        Ok(e)
    }

    /// A new array of `items`.
    pub(crate) fn array(&mut self, items: Vec<Val>) -> Result<Val, OverLimit> {
        self.charge(SLOT_BYTES * items.len() as u64)?;
        Ok(Val::Obj(self.alloc(Kind::Array(items))?))
    }

    /// A new plain object.
    pub(crate) fn object(&mut self) -> Result<ObjId, OverLimit> {
        self.alloc(Kind::Plain)
    }

    // ------------------------------------------------------ properties --

    /// `Reflect.get(target, name)`; `Err(exception)` when `target` is not
    /// an object.
    pub(crate) fn get(&mut self, target: &Val, name: &str) -> Result<Result<Val, Val>, OverLimit> {
        let Val::Obj(id) = target else {
            return Ok(Err(self.type_error("Reflect.get called on non-object")?));
        };
        Ok(Ok(self.get_prop(*id, name)))
    }

    /// Property `name` of object `id` (own, then what its kind provides).
    pub(crate) fn get_prop(&self, id: ObjId, name: &str) -> Val {
        let Some(o) = self.obj(id) else {
            return Val::Undefined;
        };
        if let Some(v) = o.props.get(name) {
            return v.clone();
        }
        match &o.kind {
            Kind::Array(a) => {
                if name == "length" {
                    return Val::Num(a.len() as f64);
                }
                if let Some(i) = array_index(name) {
                    return a.get(i).cloned().unwrap_or(Val::Undefined);
                }
            }
            Kind::Bytes(_) | Kind::StrBytes(_) => {
                let b = self.bytes(&Val::Obj(id)).unwrap_or(&[]);
                if name == "length" || name == "byteLength" {
                    return Val::Num(b.len() as f64);
                }
                if let Some(i) = array_index(name) {
                    return b.get(i).map_or(Val::Undefined, |x| Val::Num(f64::from(*x)));
                }
            }
            Kind::Error => {
                if name == "name" {
                    return Val::str("Error");
                }
            }
            Kind::Date(_) => match name {
                "getTime" | "valueOf" => return Val::Obj(self.builtins.date_get_time),
                "getTimezoneOffset" => return Val::Obj(self.builtins.date_get_timezone_offset),
                _ => {}
            },
            Kind::Plain | Kind::Function(_) => {}
        }
        Val::Undefined
    }

    /// `Reflect.get(target, index)`.
    pub(crate) fn get_index(
        &mut self,
        target: &Val,
        index: i64,
    ) -> Result<Result<Val, Val>, OverLimit> {
        let Val::Obj(id) = target else {
            return Ok(Err(self.type_error("Reflect.get called on non-object")?));
        };
        if let Some(o) = self.obj(*id) {
            let i = usize::try_from(index).ok();
            match (&o.kind, i) {
                (Kind::Array(a), Some(i)) => {
                    return Ok(Ok(a.get(i).cloned().unwrap_or(Val::Undefined)))
                }
                (Kind::Bytes(_) | Kind::StrBytes(_), Some(i)) => {
                    let b = self.bytes(target).unwrap_or(&[]);
                    return Ok(Ok(b
                        .get(i)
                        .map_or(Val::Undefined, |x| Val::Num(f64::from(*x)))));
                }
                _ => {}
            }
        }
        Ok(Ok(self.get_prop(*id, &index.to_string())))
    }

    /// `Reflect.set(target, name, v)`.
    pub(crate) fn set(
        &mut self,
        target: &Val,
        name: &str,
        v: Val,
    ) -> Result<Result<(), Val>, OverLimit> {
        let Val::Obj(id) = target else {
            return Ok(Err(self.type_error("Reflect.set called on non-object")?));
        };
        if let Some(i) = array_index(name) {
            return self.set_index(target, i as i64, v);
        }
        if name == "length" {
            if let Some(Obj {
                kind: Kind::Array(_),
                ..
            }) = self.obj(*id)
            {
                let n = to_number(&v);
                if !(0.0..=MAX_ARRAY_LEN as f64).contains(&n) || n.fract() != 0.0 {
                    return Ok(Err(self.range_error("Invalid array length")?));
                }
                let n = n as usize;
                let old = self.array_len(*id);
                if n > old {
                    self.charge(SLOT_BYTES * (n - old) as u64)?;
                }
                if let Some(Obj {
                    kind: Kind::Array(a),
                    ..
                }) = self.obj_mut(*id)
                {
                    a.resize(n, Val::Undefined);
                }
                return Ok(Ok(()));
            }
        }
        self.charge(SLOT_BYTES + name.len() as u64)?;
        if let Some(o) = self.obj_mut(*id) {
            o.props.insert(Arc::from(name), v);
        }
        Ok(Ok(()))
    }

    fn array_len(&self, id: ObjId) -> usize {
        match self.obj(id) {
            Some(Obj {
                kind: Kind::Array(a),
                ..
            }) => a.len(),
            _ => 0,
        }
    }

    /// `Reflect.set(target, index, v)`.
    pub(crate) fn set_index(
        &mut self,
        target: &Val,
        index: i64,
        v: Val,
    ) -> Result<Result<(), Val>, OverLimit> {
        let Val::Obj(id) = target else {
            return Ok(Err(self.type_error("Reflect.set called on non-object")?));
        };
        let i = usize::try_from(index).ok();
        let kind_is = self.obj(*id).map(|o| match o.kind {
            Kind::Array(_) => 1,
            Kind::Bytes(_) | Kind::StrBytes(_) => 2,
            _ => 0,
        });
        match (kind_is, i) {
            (Some(1), Some(i)) => {
                if i >= MAX_ARRAY_LEN {
                    return Ok(Err(self.range_error("Invalid array length")?));
                }
                let old = self.array_len(*id);
                if i >= old {
                    self.charge(SLOT_BYTES * (i + 1 - old) as u64)?;
                }
                if let Some(Obj {
                    kind: Kind::Array(a),
                    ..
                }) = self.obj_mut(*id)
                {
                    if i >= a.len() {
                        a.resize(i + 1, Val::Undefined);
                    }
                    a[i] = v;
                }
                Ok(Ok(()))
            }
            (Some(2), Some(i)) => {
                let n = to_number(&v);
                if let Some(b) = self.bytes_mut(target) {
                    if let Some(slot) = b.get_mut(i) {
                        *slot = to_uint8(n);
                    }
                }
                Ok(Ok(()))
            }
            _ => {
                let name = index.to_string();
                self.charge(SLOT_BYTES + name.len() as u64)?;
                if let Some(o) = self.obj_mut(*id) {
                    o.props.insert(Arc::from(name.as_str()), v);
                }
                Ok(Ok(()))
            }
        }
    }

    /// `Reflect.deleteProperty(target, name)`.
    pub(crate) fn delete(
        &mut self,
        target: &Val,
        name: &str,
    ) -> Result<Result<(), Val>, OverLimit> {
        let Val::Obj(id) = target else {
            return Ok(Err(
                self.type_error("Reflect.deleteProperty called on non-object")?
            ));
        };
        if let Some(o) = self.obj_mut(*id) {
            o.props.remove(name);
        }
        Ok(Ok(()))
    }

    /// `v.length` (what `valueLength` reads, before `parseInt`).
    pub(crate) fn length(&mut self, v: &Val) -> Result<Result<i64, Val>, OverLimit> {
        let n = match v {
            Val::Undefined | Val::Null => {
                return Ok(Err(self.type_error(
                    "Cannot read properties of undefined (reading 'length')",
                )?));
            }
            Val::Str(s) => s.encode_utf16().count() as f64,
            Val::Obj(id) => to_number(&self.get_prop(*id, "length")),
            Val::Bool(_) | Val::Num(_) => f64::NAN,
        };
        Ok(Ok(parse_int(n)))
    }

    /// `v instanceof t`.
    pub(crate) fn instance_of(&mut self, v: &Val, t: &Val) -> Result<Result<bool, Val>, OverLimit> {
        if self.native(t).is_none() {
            return Ok(Err(
                self.type_error("Right-hand side of 'instanceof' is not callable")?
            ));
        }
        let (Val::Obj(vid), Val::Obj(tid)) = (v, t) else {
            return Ok(Ok(false));
        };
        let Some(o) = self.obj(*vid) else {
            return Ok(Ok(false));
        };
        Ok(Ok(o.ctor == Some(*tid) || *tid == self.builtins.object))
    }

    /// `typeof v === "function"`.
    pub(crate) fn is_function(&self, v: &Val) -> bool {
        self.native(v).is_some()
    }

    /// JavaScript's `typeof v`.
    pub(crate) fn type_of(&self, v: &Val) -> &'static str {
        match v {
            Val::Undefined => "undefined",
            Val::Null => "object",
            Val::Bool(_) => "boolean",
            Val::Num(_) => "number",
            Val::Str(_) => "string",
            Val::Obj(_) if self.is_function(v) => "function",
            Val::Obj(_) => "object",
        }
    }

    /// `String(v)`, cut at [`MESSAGE_LIMIT`] bytes (for messages).
    pub(crate) fn to_string(&self, v: &Val) -> String {
        self.to_string_limited(v, MESSAGE_LIMIT)
    }

    /// `String(v)`, cut once it is longer than `limit` bytes (an array
    /// may repeat one long string many times).
    pub(crate) fn to_string_limited(&self, v: &Val, limit: usize) -> String {
        let mut s = self.to_string_depth(v, 0, limit);
        if s.len() > limit {
            let mut end = limit;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
        }
        s
    }

    fn to_string_depth(&self, v: &Val, depth: usize, limit: usize) -> String {
        match v {
            Val::Undefined => "undefined".into(),
            Val::Null => "null".into(),
            Val::Bool(b) => b.to_string(),
            Val::Num(n) => number_to_string(*n),
            Val::Str(s) => {
                let mut end = s.len().min(limit.saturating_add(1));
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s[..end].to_string()
            }
            Val::Obj(id) => {
                let Some(o) = self.obj(*id) else {
                    return String::new();
                };
                match &o.kind {
                    Kind::Plain => "[object Object]".into(),
                    Kind::Array(a) if depth < 8 => {
                        let mut out = String::new();
                        for (i, x) in a.iter().enumerate() {
                            if out.len() > limit {
                                break;
                            }
                            if i > 0 {
                                out.push(',');
                            }
                            if !matches!(x, Val::Undefined | Val::Null) {
                                let left = limit - out.len().min(limit);
                                out.push_str(&self.to_string_depth(x, depth + 1, left));
                            }
                        }
                        out
                    }
                    Kind::Array(_) => String::new(),
                    Kind::Bytes(_) | Kind::StrBytes(_) => {
                        let mut out = String::new();
                        for (i, b) in self.bytes(v).unwrap_or(&[]).iter().enumerate() {
                            if out.len() > limit {
                                break;
                            }
                            if i > 0 {
                                out.push(',');
                            }
                            out.push_str(&b.to_string());
                        }
                        out
                    }
                    Kind::Error => {
                        let name =
                            self.to_string_depth(&self.get_prop(*id, "name"), depth + 1, limit);
                        let message = self.get_prop(*id, "message");
                        match message {
                            Val::Undefined => name,
                            m => {
                                let m = self.to_string_depth(&m, depth + 1, limit);
                                if m.is_empty() {
                                    name
                                } else {
                                    format!("{name}: {m}")
                                }
                            }
                        }
                    }
                    Kind::Date(ms) => format!("Date({})", number_to_string(*ms)),
                    Kind::Function(_) => "function () { [native code] }".into(),
                }
            }
        }
    }

    // ------------------------------------------------- reference table --

    /// The value of reference `id` (`_values[id]`).
    pub(crate) fn value(&self, id: u32) -> Val {
        self.values
            .get(id as usize)
            .cloned()
            .unwrap_or(Val::Undefined)
    }

    /// The id and type flag `storeValue` writes for `v` (which is not a
    /// non-zero number or `undefined`), counting one more reference.
    pub(crate) fn reference(&mut self, v: &Val) -> (u32, u32) {
        let key = match v {
            Val::Num(_) => Key::Zero,
            Val::Null | Val::Undefined => Key::Null,
            Val::Bool(true) => Key::True,
            Val::Bool(false) => Key::False,
            Val::Str(s) => Key::Str(s.clone()),
            Val::Obj(id) => Key::Obj(*id),
        };
        let type_flag = match v {
            Val::Obj(_) if self.is_function(v) => 4,
            Val::Obj(_) => 1,
            Val::Str(_) => 2,
            _ => 0,
        };
        let id = match self.ids.get(&key) {
            Some(id) => *id,
            None => {
                let id = match self.pool.pop() {
                    Some(id) => id,
                    None => u32::try_from(self.values.len()).unwrap_or(u32::MAX),
                };
                let slot = id as usize;
                if slot >= self.values.len() {
                    self.values.resize(slot + 1, Val::Null);
                    self.counts.resize(slot + 1, 0);
                }
                self.values[slot] = v.clone();
                self.counts[slot] = 0;
                self.ids.insert(key, id);
                id
            }
        };
        if let Some(c) = self.counts.get_mut(id as usize) {
            if *c != PINNED {
                *c += 1;
            }
        }
        (id, type_flag)
    }

    /// `finalizeRef(id)`: one reference fewer; the id is freed at zero.
    pub(crate) fn finalize(&mut self, id: u32) {
        let slot = id as usize;
        let Some(c) = self.counts.get_mut(slot) else {
            return;
        };
        if *c == PINNED || *c == 0 {
            return;
        }
        *c -= 1;
        if *c == 0 {
            let v = std::mem::replace(&mut self.values[slot], Val::Null);
            let key = match v {
                Val::Str(s) => Some(Key::Str(s)),
                Val::Obj(o) => Some(Key::Obj(o)),
                _ => None,
            };
            if let Some(key) = key {
                if self.ids.get(&key) == Some(&id) {
                    self.ids.remove(&key);
                }
            }
            self.pool.push(id);
        }
    }

    // --------------------------------------------------------- natives --

    /// Calls (or, with `construct`, constructs with) a native that does
    /// not call back into Go. `now_ms` is the clock's wall time; `random`
    /// fills a buffer with random bytes.
    pub(crate) fn call_simple(
        &mut self,
        native: Native,
        args: &[Val],
        now_ms: f64,
        random: &mut dyn FnMut(&mut [u8]),
    ) -> Result<Result<Val, Val>, OverLimit> {
        let arg = |i: usize| args.get(i).cloned().unwrap_or(Val::Undefined);
        Ok(Ok(match native {
            Native::ObjectCtor => match arg(0) {
                v @ Val::Obj(_) => v,
                _ => Val::Obj(self.object()?),
            },
            Native::ArrayCtor => {
                if let [Val::Num(n)] = args {
                    if *n < 0.0 || n.fract() != 0.0 || *n > MAX_ARRAY_LEN as f64 {
                        return Ok(Err(self.range_error("Invalid array length")?));
                    }
                    self.charge(SLOT_BYTES * *n as u64)?;
                    Val::Obj(self.alloc(Kind::Array(vec![Val::Undefined; *n as usize]))?)
                } else {
                    self.array(args.to_vec())?
                }
            }
            Native::Uint8ArrayCtor => {
                let bytes = match arg(0) {
                    Val::Undefined => Vec::new(),
                    Val::Num(n) => {
                        if n < 0.0 || n.fract() != 0.0 || n > self.max_allocated as f64 {
                            return Ok(Err(self.range_error("Invalid typed array length")?));
                        }
                        self.charge(n as u64)?;
                        vec![0; n as usize]
                    }
                    v @ Val::Obj(_) => {
                        let len = match &v {
                            Val::Obj(id) => match self.obj(*id).map(|o| &o.kind) {
                                Some(Kind::Array(a)) => a.len(),
                                _ => self.bytes(&v).map_or(0, <[u8]>::len),
                            },
                            _ => 0,
                        };
                        self.charge(len as u64)?;
                        if let Some(b) = self.bytes(&v) {
                            b.to_vec()
                        } else if let Val::Obj(id) = v {
                            match self.obj(id).map(|o| &o.kind) {
                                Some(Kind::Array(a)) => {
                                    a.iter().map(|x| to_uint8(to_number(x))).collect()
                                }
                                _ => Vec::new(),
                            }
                        } else {
                            Vec::new()
                        }
                    }
                    _ => Vec::new(),
                };
                Val::Obj(self.alloc(Kind::Bytes(bytes))?)
            }
            Native::ErrorCtor => {
                let message = match arg(0) {
                    Val::Undefined => String::new(),
                    v => self.to_string(&v),
                };
                self.error(&message, None)?
            }
            Native::DateCtor => Val::Obj(self.alloc(Kind::Date(now_ms))?),
            Native::DateNow => Val::Num(now_ms),
            Native::DateGetTime => Val::Num(now_ms),
            Native::DateGetTimezoneOffset => Val::Num(0.0),
            Native::MinusOne => Val::Num(-1.0),
            Native::ThrowEnosys => return Ok(Err(self.enosys()?)),
            Native::ProcessCwd => Val::str("/"),
            Native::GetRandomValues => {
                let target = arg(0);
                match self.bytes_mut(&target) {
                    Some(b) => random(b),
                    None => {
                        return Ok(Err(self.type_error(
                            "The data argument must be an integer-type TypedArray",
                        )?))
                    }
                }
                target
            }
            Native::MakeFuncWrapper => {
                let id = to_number(&arg(0));
                Val::Obj(self.alloc(Kind::Function(Native::GoFunc(id)))?)
            }
            // The rest write output or call back; the runtime handles them.
            Native::GoFunc(_)
            | Native::FsWriteSync
            | Native::FsWrite
            | Native::FsEnosys
            | Native::FsOk
            | Native::Console(_) => Val::Undefined,
        }))
    }

    /// Whether `native` can be used with `new`.
    pub(crate) fn is_constructor(native: Native) -> bool {
        matches!(
            native,
            Native::ObjectCtor
                | Native::ArrayCtor
                | Native::Uint8ArrayCtor
                | Native::ErrorCtor
                | Native::DateCtor
                | Native::GoFunc(_)
        )
    }
}

/// `name` as an array index.
fn array_index(name: &str) -> Option<usize> {
    if name.is_empty() || (name.len() > 1 && name.starts_with('0')) {
        return None;
    }
    if !name.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    name.parse().ok()
}

/// JavaScript's `Number(v)`, for the values it is used on here.
pub(crate) fn to_number(v: &Val) -> f64 {
    match v {
        Val::Undefined => f64::NAN,
        Val::Null => 0.0,
        Val::Bool(b) => f64::from(u8::from(*b)),
        Val::Num(n) => *n,
        Val::Str(s) => {
            let t = s.trim();
            if t.is_empty() {
                0.0
            } else {
                t.parse().unwrap_or(f64::NAN)
            }
        }
        Val::Obj(_) => f64::NAN,
    }
}

/// Conversion to a `Uint8Array` element.
fn to_uint8(n: f64) -> u8 {
    if !n.is_finite() {
        return 0;
    }
    (n.trunc().rem_euclid(256.0)) as u8
}

/// `parseInt` of a number, as `valueLength` then stores it (`setInt64`
/// of NaN writes 0).
fn parse_int(n: f64) -> i64 {
    if !n.is_finite() {
        return 0;
    }
    n.trunc() as i64
}

/// JavaScript's `Number.prototype.toString()` (shortest round-trip
/// digits, ECMAScript's choice between plain and exponent notation).
pub(crate) fn number_to_string(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n == 0.0 {
        return "0".into();
    }
    if n.is_infinite() {
        return if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if n < 0.0 {
        return format!("-{}", number_to_string(-n));
    }
    let sci = format!("{n:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let e: i64 = exp.parse().unwrap_or(0);
    let k = digits.len() as i64;
    let point = e + 1;
    if k <= point && point <= 21 {
        format!("{digits}{}", "0".repeat((point - k) as usize))
    } else if 0 < point && point <= 21 {
        format!(
            "{}.{}",
            &digits[..point as usize],
            &digits[point as usize..]
        )
    } else if -6 < point && point <= 0 {
        format!("0.{}{digits}", "0".repeat((-point) as usize))
    } else {
        let sign = if point - 1 < 0 { '-' } else { '+' };
        let rest = if k > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        format!("{}{rest}e{sign}{}", &digits[..1], (point - 1).abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_javascript() {
        for (n, s) in [
            (1.0, "1"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (1.5e-10, "1.5e-10"),
            (f64::NAN, "NaN"),
            (-0.0, "0"),
        ] {
            assert_eq!(number_to_string(n), s, "{n}");
        }
    }

    #[test]
    fn reference_ids_follow_wasm_exec() {
        let mut js = Js::new(1 << 20);
        assert_eq!(js.reference(&Val::Num(0.0)), (ID_ZERO, 0));
        assert_eq!(js.reference(&Val::Null), (ID_NULL, 0));
        assert_eq!(js.reference(&Val::Bool(true)), (ID_TRUE, 0));
        assert_eq!(js.reference(&Val::Obj(js.global())), (ID_GLOBAL, 1));
        let (a, flag) = js.reference(&Val::str("x"));
        assert_eq!((a, flag), (7, 2));
        assert_eq!(
            js.reference(&Val::str("x")).0,
            a,
            "equal strings share an id"
        );
        js.finalize(a);
        assert_eq!(js.value(a), Val::str("x"), "still referenced once");
        js.finalize(a);
        assert_eq!(js.value(a), Val::Null);
        let (b, _) = js.reference(&Val::str("y"));
        assert_eq!(b, a, "freed ids are reused");
        let f = js.get_prop(js.go(), "_makeFuncWrapper");
        assert_eq!(js.reference(&f).1, 4);
    }

    #[test]
    fn host_allocations_are_bounded() {
        let mut js = Js::new(2000);
        let r = js.call_simple(Native::Uint8ArrayCtor, &[Val::Num(1e12)], 0.0, &mut |_| {});
        assert!(
            matches!(r, Ok(Err(_))),
            "a huge typed array is a RangeError"
        );
        let array = [Val::Num(800.0)];
        let r = js.call_simple(Native::Uint8ArrayCtor, &array, 0.0, &mut |_| {});
        assert!(matches!(r, Ok(Ok(_))));
        let r = js.call_simple(Native::Uint8ArrayCtor, &array, 0.0, &mut |_| {});
        assert!(matches!(r, Ok(Ok(_))));
        let r = js.call_simple(Native::Uint8ArrayCtor, &array, 0.0, &mut |_| {});
        assert_eq!(r, Err(OverLimit));
    }
}
