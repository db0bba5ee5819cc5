#!/usr/bin/env node
// A stand-in for kpt's nodejs wasm runtime (KPT_FN_WASM_RUNTIME=nodejs),
// written for this project from the Go js/wasm ABI description in
// shared/reference/kpt-wasm-and-krm-functions.md, section 1.3.
//
// It loads a module exactly as kpt does: a `Go` host object provides the
// import module "go" (each import takes the frame address `sp`), the module
// is instantiated, `run(argc, argv)` is called after argv/env are written
// at offset 4096, and then the ResourceList read from stdin is passed to
// `globalThis.processResourceList`. If the result contains the text
// "kind: ResourceList" it is printed (console.log, so one newline is
// appended); otherwise `processResourceListErrors(rl)` is printed. The exit
// code is 0 either way, as in kpt's glue; kpt itself then fails the step
// when stdout is not a ResourceList.
//
// Usage: KPT_FN_WASM_PATH=fn.wasm node kpt-wasm-harness.js < rl.yaml
//        node kpt-wasm-harness.js fn.wasm < rl.yaml
// With --stats, a JSON line on stderr reports timings, arena use (from the
// module's optional arena_* exports) and whether memory grew.
"use strict";

const fs = require("fs");

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8");

const NAN_HEAD = 0x7ff80000;

/** The host side of the Go js/wasm ABI. */
class Go {
  constructor() {
    this.argv = ["js"];
    this.env = {};
    this.exited = false;
    this.exitCode = 0;
    this._pendingEvent = null;
    this._timeouts = new Map();
    this._nextTimeout = 1;

    const mem = () => this._mem;
    const setInt64 = (addr, v) => {
      mem().setUint32(addr, v, true);
      mem().setUint32(addr + 4, Math.floor(v / 4294967296), true);
    };
    const getInt64 = (addr) =>
      mem().getUint32(addr, true) + mem().getInt32(addr + 4, true) * 4294967296;
    const loadValue = (addr) => {
      const f = mem().getFloat64(addr, true);
      if (f === 0) return undefined;
      if (!Number.isNaN(f)) return f;
      return this._values[mem().getUint32(addr, true)];
    };
    const storeValue = (addr, v) => {
      if (typeof v === "number" && v !== 0) {
        if (Number.isNaN(v)) {
          mem().setUint32(addr + 4, NAN_HEAD, true);
          mem().setUint32(addr, 0, true);
        } else {
          mem().setFloat64(addr, v, true);
        }
        return;
      }
      if (v === undefined) {
        mem().setFloat64(addr, 0, true);
        return;
      }
      let id = this._ids.get(v);
      if (id === undefined) {
        id = this._idPool.pop();
        if (id === undefined) id = this._values.length;
        this._values[id] = v;
        this._refCounts[id] = 0;
        this._ids.set(v, id);
      }
      this._refCounts[id]++;
      let type = 0;
      if (typeof v === "object" && v !== null) type = 1;
      else if (typeof v === "string") type = 2;
      else if (typeof v === "symbol") type = 3;
      else if (typeof v === "function") type = 4;
      mem().setUint32(addr + 4, NAN_HEAD | type, true);
      mem().setUint32(addr, id, true);
    };
    const buffer = () => this._inst.exports.mem.buffer;
    const loadSlice = (addr) => new Uint8Array(buffer(), getInt64(addr), getInt64(addr + 8));
    const loadValues = (addr) => {
      const base = getInt64(addr);
      const len = getInt64(addr + 8);
      const out = new Array(len);
      for (let i = 0; i < len; i++) out[i] = loadValue(base + i * 8);
      return out;
    };
    const loadString = (addr) =>
      decoder.decode(new DataView(buffer(), getInt64(addr), getInt64(addr + 8)));
    const freshSp = () => this._inst.exports.getsp() >>> 0;
    const started = Date.now() - performance.now();

    this.importObject = {
      go: {
        "runtime.wasmExit": (sp) => {
          sp >>>= 0;
          this.exitCode = mem().getInt32(sp + 8, true);
          this.exited = true;
        },
        "runtime.wasmWrite": (sp) => {
          sp >>>= 0;
          const fd = getInt64(sp + 8);
          const p = getInt64(sp + 16);
          const n = mem().getInt32(sp + 24, true);
          // As in kpt's glue, writes end up on stdout, whatever the fd.
          process.stdout.write(`[fd ${fd}] ` + decoder.decode(new Uint8Array(buffer(), p, n)));
        },
        "runtime.resetMemoryDataView": (sp) => {
          this._mem = new DataView(buffer());
        },
        "runtime.nanotime1": (sp) => {
          setInt64((sp >>> 0) + 8, (started + performance.now()) * 1e6);
        },
        "runtime.walltime": (sp) => {
          sp >>>= 0;
          const ms = Date.now();
          setInt64(sp + 8, ms / 1000);
          mem().setInt32(sp + 16, (ms % 1000) * 1e6, true);
        },
        "runtime.scheduleTimeoutEvent": (sp) => {
          sp >>>= 0;
          const id = this._nextTimeout++;
          this._timeouts.set(id, setTimeout(() => this._resume(), getInt64(sp + 8)));
          mem().setInt32(sp + 16, id, true);
        },
        "runtime.clearTimeoutEvent": (sp) => {
          const id = mem().getInt32((sp >>> 0) + 8, true);
          clearTimeout(this._timeouts.get(id));
          this._timeouts.delete(id);
        },
        "runtime.getRandomData": (sp) => {
          require("crypto").randomFillSync(loadSlice((sp >>> 0) + 8));
        },
        "syscall/js.finalizeRef": (sp) => {
          const id = mem().getUint32((sp >>> 0) + 8, true);
          this._refCounts[id]--;
          if (this._refCounts[id] === 0) {
            const v = this._values[id];
            this._values[id] = null;
            this._ids.delete(v);
            this._idPool.push(id);
          }
        },
        "syscall/js.stringVal": (sp) => {
          sp >>>= 0;
          storeValue(sp + 24, loadString(sp + 8));
        },
        "syscall/js.valueGet": (sp) => {
          sp >>>= 0;
          const result = Reflect.get(loadValue(sp + 8), loadString(sp + 16));
          storeValue(freshSp() + 32, result);
        },
        "syscall/js.valueSet": (sp) => {
          sp >>>= 0;
          Reflect.set(loadValue(sp + 8), loadString(sp + 16), loadValue(sp + 32));
        },
        "syscall/js.valueDelete": (sp) => {
          sp >>>= 0;
          Reflect.deleteProperty(loadValue(sp + 8), loadString(sp + 16));
        },
        "syscall/js.valueIndex": (sp) => {
          sp >>>= 0;
          storeValue(sp + 24, Reflect.get(loadValue(sp + 8), getInt64(sp + 16)));
        },
        "syscall/js.valueSetIndex": (sp) => {
          sp >>>= 0;
          Reflect.set(loadValue(sp + 8), getInt64(sp + 16), loadValue(sp + 24));
        },
        "syscall/js.valueCall": (sp) => {
          sp >>>= 0;
          try {
            const v = loadValue(sp + 8);
            const m = Reflect.get(v, loadString(sp + 16));
            const result = Reflect.apply(m, v, loadValues(sp + 32));
            sp = freshSp();
            storeValue(sp + 56, result);
            mem().setUint8(sp + 64, 1);
          } catch (err) {
            sp = freshSp();
            storeValue(sp + 56, err);
            mem().setUint8(sp + 64, 0);
          }
        },
        "syscall/js.valueInvoke": (sp) => {
          sp >>>= 0;
          try {
            const result = Reflect.apply(loadValue(sp + 8), undefined, loadValues(sp + 16));
            sp = freshSp();
            storeValue(sp + 40, result);
            mem().setUint8(sp + 48, 1);
          } catch (err) {
            sp = freshSp();
            storeValue(sp + 40, err);
            mem().setUint8(sp + 48, 0);
          }
        },
        "syscall/js.valueNew": (sp) => {
          sp >>>= 0;
          try {
            const result = Reflect.construct(loadValue(sp + 8), loadValues(sp + 16));
            sp = freshSp();
            storeValue(sp + 40, result);
            mem().setUint8(sp + 48, 1);
          } catch (err) {
            sp = freshSp();
            storeValue(sp + 40, err);
            mem().setUint8(sp + 48, 0);
          }
        },
        "syscall/js.valueLength": (sp) => {
          sp >>>= 0;
          setInt64(sp + 16, parseInt(loadValue(sp + 8).length));
        },
        "syscall/js.valuePrepareString": (sp) => {
          sp >>>= 0;
          const bytes = encoder.encode(String(loadValue(sp + 8)));
          storeValue(sp + 16, bytes);
          setInt64(sp + 24, bytes.length);
        },
        "syscall/js.valueLoadString": (sp) => {
          sp >>>= 0;
          loadSlice(sp + 16).set(loadValue(sp + 8));
        },
        "syscall/js.valueInstanceOf": (sp) => {
          sp >>>= 0;
          mem().setUint8(sp + 24, loadValue(sp + 8) instanceof loadValue(sp + 16) ? 1 : 0);
        },
        "syscall/js.copyBytesToGo": (sp) => {
          sp >>>= 0;
          const dst = loadSlice(sp + 8);
          const src = loadValue(sp + 32);
          if (!(src instanceof Uint8Array || src instanceof Uint8ClampedArray)) {
            mem().setUint8(sp + 48, 0);
            return;
          }
          const n = src.subarray(0, dst.length);
          dst.set(n);
          setInt64(sp + 40, n.length);
          mem().setUint8(sp + 48, 1);
        },
        "syscall/js.copyBytesToJS": (sp) => {
          sp >>>= 0;
          const dst = loadValue(sp + 8);
          const src = loadSlice(sp + 16);
          if (!(dst instanceof Uint8Array || dst instanceof Uint8ClampedArray)) {
            mem().setUint8(sp + 48, 0);
            return;
          }
          const n = src.subarray(0, dst.length);
          dst.set(n);
          setInt64(sp + 40, n.length);
          mem().setUint8(sp + 48, 1);
        },
        debug: (value) => {
          console.error("wasm debug:", value);
        },
      },
    };
  }

  /** Starts the program: argv and env at 4096, then `run(argc, argv)`. */
  run(instance) {
    this._inst = instance;
    this._mem = new DataView(instance.exports.mem.buffer);
    this._values = [NaN, 0, null, true, false, globalThis, this];
    this._refCounts = new Array(this._values.length).fill(Infinity);
    this._ids = new Map([[0, 1], [null, 2], [true, 3], [false, 4], [globalThis, 5], [this, 6]]);
    this._idPool = [];
    let offset = 4096;
    const strPtr = (s) => {
      const ptr = offset;
      const bytes = encoder.encode(s + "\0");
      new Uint8Array(this._mem.buffer, offset, bytes.length).set(bytes);
      offset += bytes.length;
      if (offset % 8 !== 0) offset += 8 - (offset % 8);
      return ptr;
    };
    const ptrs = this.argv.map(strPtr);
    ptrs.push(0);
    for (const key of Object.keys(this.env).sort()) ptrs.push(strPtr(`${key}=${this.env[key]}`));
    ptrs.push(0);
    const argv = offset;
    for (const p of ptrs) {
      this._mem.setUint32(offset, p, true);
      this._mem.setUint32(offset + 4, 0, true);
      offset += 8;
    }
    if (offset >= 4096 + 8192) throw new Error("argv and env exceed the 8 KiB the ABI allows");
    instance.exports.run(this.argv.length, argv);
  }

  _resume() {
    if (this.exited) throw new Error("the wasm program has already exited");
    this._inst.exports.resume();
  }

  /** A JS function that calls back into the module with callback `id`. */
  _makeFuncWrapper(id) {
    const go = this;
    return function () {
      const event = { id: id, this: this, args: arguments };
      go._pendingEvent = event;
      go._resume();
      return event.result;
    };
  }
}

/**
 * Instantiates `wasmBytes` and runs `processResourceList` on `input` as
 * kpt's glue does. Returns the text kpt's glue prints (without the newline
 * console.log adds) and measurements.
 */
async function runModule(wasmBytes, input) {
  const t0 = performance.now();
  const go = new Go();
  const { instance } = await WebAssembly.instantiate(wasmBytes, go.importObject);
  const memBefore = instance.exports.mem.buffer.byteLength;
  go.run(instance);
  const t1 = performance.now();
  let output = processResourceList(input);
  const ok = typeof output === "string" && output.includes("kind: ResourceList");
  if (!ok) output = processResourceListErrors(input);
  const t2 = performance.now();
  const ex = instance.exports;
  return {
    output,
    ok,
    stats: {
      instantiateMs: t1 - t0,
      processMs: t2 - t1,
      memoryBytes: ex.mem.buffer.byteLength,
      memoryGrew: ex.mem.buffer.byteLength !== memBefore,
      arenaPeakBytes: ex.arena_peak_bytes ? ex.arena_peak_bytes() >>> 0 : null,
      arenaCapacityBytes: ex.arena_capacity_bytes ? ex.arena_capacity_bytes() >>> 0 : null,
    },
  };
}

async function main() {
  const args = process.argv.slice(2);
  const stats = args.includes("--stats");
  const wasmPath = args.find((a) => !a.startsWith("--")) || process.env.KPT_FN_WASM_PATH;
  if (!wasmPath) {
    console.error("usage: node kpt-wasm-harness.js [--stats] FN.wasm < resourcelist.yaml");
    process.exit(2);
  }
  const input = fs.readFileSync(0, "utf-8");
  const result = await runModule(fs.readFileSync(wasmPath), input);
  console.log(result.output);
  if (stats) console.error(JSON.stringify(result.stats));
}

module.exports = { Go, runModule };

if (require.main === module) {
  main().catch((e) => {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  });
}
