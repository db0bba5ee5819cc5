//! starlib's `time.star` (go.starlark.net's `lib/time`, which starlib
//! re-exports): `parse_duration`, `parse_time`, `from_timestamp`, `now`,
//! `time`, `is_valid_timezone`, the constants `nanosecond` … `hour`, and
//! the `time.duration` and `time.time` values with their attributes,
//! methods (`format`, `in_location`) and operators. The Go semantics are
//! in [`super::go_time`].

// `time()` takes Go's eight `Date` fields, and the macro's generated
// function takes them all.
#![allow(clippy::too_many_arguments)]

use std::fmt;

use allocative::Allocative;
use starlark::environment::{GlobalsBuilder, Methods, MethodsBuilder, MethodsStatic};
use starlark::values::float::StarlarkFloat;
use starlark::values::{
    starlark_value, Heap, NoSerialize, ProvidesStaticType, StarlarkValue, UnpackValue, Value,
    ValueLike,
};
use starlark::{starlark_module, starlark_simple_value};

use super::go_time::{self, GoTime, Location};

pub use values::{Duration, Time};

/// The value types. starlark-rust's `ProvidesStaticType` derive writes an
/// `unsafe impl` (its type-id trait), which this module alone allows.
#[allow(unsafe_code)]
mod values {
    use super::*;

    /// A `time.duration`: Go's `time.Duration`, nanoseconds.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, ProvidesStaticType, NoSerialize, Allocative)]
    pub struct Duration(pub i64);
    starlark_simple_value!(Duration);

    /// A `time.time`: Go's `time.Time`.
    #[derive(Debug, Clone, PartialEq, ProvidesStaticType, NoSerialize, Allocative)]
    pub struct Time(#[allocative(skip)] pub GoTime);
    starlark_simple_value!(Time);
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&go_time::duration_string(self.0))
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

fn err<T>(message: impl Into<String>) -> starlark::Result<T> {
    Err(starlark::Error::new_other(anyhow::anyhow!(message.into())))
}

/// An `int` argument as Go's `Int64()` reads it.
fn int64(v: Value<'_>) -> Option<i64> {
    i64::unpack_value(v).ok().flatten()
}

#[starlark_value(type = "time.duration")]
impl<'v> StarlarkValue<'v> for Duration {
    fn to_bool(&self) -> bool {
        self.0 != 0
    }

    fn write_hash(
        &self,
        hasher: &mut starlark::collections::StarlarkHasher,
    ) -> starlark::Result<()> {
        std::hash::Hash::hash(&self.0, hasher);
        Ok(())
    }

    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        Ok(other.downcast_ref::<Duration>() == Some(self))
    }

    fn compare(&self, other: Value<'v>) -> starlark::Result<std::cmp::Ordering> {
        match other.downcast_ref::<Duration>() {
            Some(o) => Ok(self.0.cmp(&o.0)),
            None => err(format!(
                "unsupported comparison: time.duration < {}",
                other.get_type()
            )),
        }
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        let ns = self.0;
        Some(match attribute {
            "hours" => heap
                .alloc((ns / 3_600_000_000_000) as f64 + (ns % 3_600_000_000_000) as f64 / 3.6e12),
            "minutes" => {
                heap.alloc((ns / 60_000_000_000) as f64 + (ns % 60_000_000_000) as f64 / 6e10)
            }
            "seconds" => {
                heap.alloc((ns / go_time::SECOND) as f64 + (ns % go_time::SECOND) as f64 / 1e9)
            }
            "milliseconds" => heap.alloc(ns / 1_000_000),
            "microseconds" => heap.alloc(ns / 1_000),
            "nanoseconds" => heap.alloc(ns),
            _ => return None,
        })
    }

    fn dir_attr(&self) -> Vec<String> {
        [
            "hours",
            "minutes",
            "seconds",
            "milliseconds",
            "microseconds",
            "nanoseconds",
        ]
        .map(String::from)
        .to_vec()
    }

    fn add(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        if let Some(d) = rhs.downcast_ref::<Duration>() {
            return Some(Ok(heap.alloc(Duration(self.0.wrapping_add(d.0)))));
        }
        let t = rhs.downcast_ref::<Time>()?;
        Some(Ok(heap.alloc(Time(t.0.add(self.0)))))
    }

    fn sub(&self, other: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        match other.downcast_ref::<Duration>() {
            Some(d) => Ok(heap.alloc(Duration(self.0.wrapping_sub(d.0)))),
            None => err(format!(
                "unknown binary op: time.duration - {}",
                other.get_type()
            )),
        }
    }

    fn mul(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        self.times(rhs, heap)
    }

    fn rmul(&self, lhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        self.times(lhs, heap)
    }

    fn div(&self, other: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        let zero = || err("time.duration division by zero");
        if let Some(d) = other.downcast_ref::<Duration>() {
            if d.0 == 0 {
                return zero();
            }
            return Ok(heap.alloc(self.0 as f64 / d.0 as f64));
        }
        if let Some(f) = other.downcast_ref::<StarlarkFloat>() {
            if f.0 == 0.0 {
                return zero();
            }
            return Ok(heap.alloc(Duration((self.0 as f64 / f.0) as i64)));
        }
        match int64(other) {
            Some(0) => zero(),
            Some(i) => Ok(heap.alloc(Duration(self.0.wrapping_div(i)))),
            None if other.get_type() == "int" => {
                err("int value out of range (want signed 64-bit value)")
            }
            None => err(format!(
                "unknown binary op: time.duration / {}",
                other.get_type()
            )),
        }
    }

    fn floor_div(&self, other: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        match other.downcast_ref::<Duration>() {
            Some(d) if d.0 == 0 => err("time.duration division by zero"),
            Some(d) => Ok(heap.alloc(self.0.wrapping_div(d.0))),
            None => err(format!(
                "unknown binary op: time.duration // {}",
                other.get_type()
            )),
        }
    }
}

impl Duration {
    fn times<'v>(&self, n: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        if n.get_type() != "int" {
            return None;
        }
        Some(match int64(n) {
            Some(i) => Ok(heap.alloc(Duration(self.0.wrapping_mul(i)))),
            None => err("int value out of range (want signed 64-bit value)"),
        })
    }

    /// A duration argument: a duration or a Go duration string.
    fn unpack(v: Value<'_>) -> starlark::Result<i64> {
        if let Some(d) = v.downcast_ref::<Duration>() {
            return Ok(d.0);
        }
        match v.unpack_str() {
            Some(s) => go_time::parse_duration(s).or_else(err),
            None => err(format!(
                "got {}, want a duration, string, or int",
                v.get_type()
            )),
        }
    }
}

#[starlark_value(type = "time.time")]
impl<'v> StarlarkValue<'v> for Time {
    fn to_bool(&self) -> bool {
        !self.0.is_zero()
    }

    fn write_hash(
        &self,
        hasher: &mut starlark::collections::StarlarkHasher,
    ) -> starlark::Result<()> {
        std::hash::Hash::hash(&(self.0.unix, self.0.nsec), hasher);
        Ok(())
    }

    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        Ok(other
            .downcast_ref::<Time>()
            .is_some_and(|o| (o.0.unix, o.0.nsec) == (self.0.unix, self.0.nsec)))
    }

    fn compare(&self, other: Value<'v>) -> starlark::Result<std::cmp::Ordering> {
        match other.downcast_ref::<Time>() {
            Some(o) => Ok((self.0.unix, self.0.nsec).cmp(&(o.0.unix, o.0.nsec))),
            None => err(format!(
                "unsupported comparison: time.time < {}",
                other.get_type()
            )),
        }
    }

    fn get_methods() -> Option<&'static Methods> {
        static RES: MethodsStatic = MethodsStatic::new("time.time", time_methods);
        Some(RES.methods())
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        let c = self.0.civil();
        Some(match attribute {
            "year" => heap.alloc(c.year),
            "month" => heap.alloc(c.month),
            "day" => heap.alloc(c.day),
            "hour" => heap.alloc(c.hour),
            "minute" => heap.alloc(c.minute),
            "second" => heap.alloc(c.second),
            "nanosecond" => heap.alloc(self.0.nsec),
            "unix" => heap.alloc(self.0.unix),
            "unix_nano" => heap.alloc(self.0.unix_nano()),
            _ => return None,
        })
    }

    fn dir_attr(&self) -> Vec<String> {
        [
            "format",
            "in_location",
            "year",
            "month",
            "day",
            "hour",
            "minute",
            "second",
            "nanosecond",
            "unix",
            "unix_nano",
        ]
        .map(String::from)
        .to_vec()
    }

    fn add(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        let d = rhs.downcast_ref::<Duration>()?;
        Some(Ok(heap.alloc(Time(self.0.add(d.0)))))
    }

    fn sub(&self, other: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        if let Some(d) = other.downcast_ref::<Duration>() {
            return Ok(heap.alloc(Time(self.0.add(d.0.wrapping_neg()))));
        }
        match other.downcast_ref::<Time>() {
            Some(t) => Ok(heap.alloc(Duration(self.0.sub(&t.0)))),
            None => err(format!(
                "unknown binary op: time.time - {}",
                other.get_type()
            )),
        }
    }
}

#[starlark_module]
fn time_methods(builder: &mut MethodsBuilder) {
    /// `t.format(layout)`: the time in Go's layout.
    fn format<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] layout: &str,
    ) -> starlark::Result<String> {
        let t = this.downcast_ref::<Time>().ok_or_else(|| {
            starlark::Error::new_other(anyhow::anyhow!("format: not a time.time"))
        })?;
        Ok(t.0.format(layout))
    }

    /// `t.in_location(name)`: the same instant in another zone.
    fn in_location<'v>(
        this: Value<'v>,
        #[starlark(require = pos)] location: &str,
    ) -> starlark::Result<Time> {
        let t = this.downcast_ref::<Time>().ok_or_else(|| {
            starlark::Error::new_other(anyhow::anyhow!("in_location: not a time.time"))
        })?;
        let loc = Location::load(location).or_else(err)?;
        Ok(Time(t.0.in_location(loc)))
    }
}

/// The time now, from the host's clock.
fn now_time() -> GoTime {
    #[cfg(target_arch = "wasm32")]
    let (sec, nsec) = crate::gojs::wall_clock();
    #[cfg(not(target_arch = "wasm32"))]
    let (sec, nsec) = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(_) => (0, 0),
    };
    GoTime::from_unix(sec, i64::from(nsec))
}

/// The members of the `time` namespace.
#[starlark_module]
pub fn time_members(globals: &mut GlobalsBuilder) {
    const nanosecond: Duration = Duration(1);
    const microsecond: Duration = Duration(1_000);
    const millisecond: Duration = Duration(1_000_000);
    const second: Duration = Duration(go_time::SECOND);
    const minute: Duration = Duration(60 * go_time::SECOND);
    const hour: Duration = Duration(3_600 * go_time::SECOND);

    /// `time.parse_duration(d)`: a duration from Go's duration text.
    fn parse_duration<'v>(#[starlark(require = pos)] d: Value<'v>) -> starlark::Result<Duration> {
        Ok(Duration(Duration::unpack(d)?))
    }

    /// `time.is_valid_timezone(loc)`: whether the zone name is known.
    fn is_valid_timezone(#[starlark(require = pos)] loc: &str) -> starlark::Result<bool> {
        Ok(Location::load(loc).is_ok())
    }

    /// `time.parse_time(x, format = RFC3339, location = "UTC")`.
    fn parse_time(
        x: &str,
        #[starlark(default = go_time::RFC3339)] format: &str,
        #[starlark(default = "UTC")] location: &str,
    ) -> starlark::Result<Time> {
        let loc = Location::load(location).or_else(err)?;
        go_time::parse(format, x, &loc).map(Time).or_else(err)
    }

    /// `time.from_timestamp(sec, nsec = 0)`: a Unix time.
    fn from_timestamp(
        #[starlark(require = pos)] sec: i64,
        #[starlark(require = pos, default = 0)] nsec: i64,
    ) -> starlark::Result<Time> {
        Ok(Time(GoTime::from_unix(sec, nsec)))
    }

    /// `time.now()`: the current time.
    fn now() -> starlark::Result<Time> {
        Ok(Time(now_time()))
    }

    /// `time.time(year=, month=, day=, hour=, minute=, second=,
    /// nanosecond=, location=)`: Go's `time.Date`, every field optional.
    fn time(
        #[starlark(require = named, default = 0)] year: i64,
        #[starlark(require = named, default = 0)] month: i64,
        #[starlark(require = named, default = 0)] day: i64,
        #[starlark(require = named, default = 0)] hour: i64,
        #[starlark(require = named, default = 0)] minute: i64,
        #[starlark(require = named, default = 0)] second: i64,
        #[starlark(require = named, default = 0)] nanosecond: i64,
        #[starlark(require = named, default = "")] location: &str,
    ) -> starlark::Result<Time> {
        let loc = Location::load(location).or_else(err)?;
        Ok(Time(GoTime::date(
            year, month, day, hour, minute, second, nanosecond, loc,
        )))
    }
}

#[cfg(test)]
mod tests {
    use starlark::environment::{GlobalsBuilder, Module};
    use starlark::eval::Evaluator;
    use starlark::syntax::{AstModule, Dialect};

    /// Runs `program` with `time` bound and returns the value of its last
    /// expression, as `str()` shows it.
    fn run(program: &str) -> Result<String, String> {
        let mut builder = GlobalsBuilder::standard();
        builder.namespace("time", super::time_members);
        let globals = builder.build();
        let ast = AstModule::parse("t.star", program.to_string(), &Dialect::Standard)
            .map_err(|e| e.to_string())?;
        Module::with_temp_heap(|module| {
            let mut eval = Evaluator::new(&module);
            eval.eval_module(ast, &globals)
                .map(|v| v.to_str())
                .map_err(|e| e.without_diagnostic().to_string())
        })
    }

    #[test]
    fn programs_see_go_time_values() {
        for (program, want) in [
            ("str(time.parse_duration('1h30m'))", "1h30m0s"),
            ("time.parse_duration('90s').minutes", "1.5"),
            ("time.hour // time.minute", "60"),
            ("time.second * 3 + 2 * time.millisecond", "3.002s"),
            ("time.hour / time.minute", "60.0"),
            ("time.hour / 4", "15m0s"),
            ("time.minute > time.second", "True"),
            ("str(time.parse_time('2021-03-22T23:20:50.52Z'))", "2021-03-22 23:20:50.52 +0000 UTC"),
            ("time.parse_time('2021-03-22T23:20:50Z').unix", "1616455250"),
            ("time.from_timestamp(1616455250).format('Mon, 02 Jan 2006 15:04:05 MST')", "Mon, 22 Mar 2021 23:20:50 UTC"),
            ("str(time.time(year=2009, month=11, day=10, hour=23, location='America/New_York'))", "2009-11-10 23:00:00 -0500 EST"),
            ("str(time.time(year=2009, month=11, day=10).in_location('Asia/Tokyo'))", "2009-11-10 09:00:00 +0900 JST"),
            ("str(time.parse_time('2021-01-02', format='2006-01-02') + 36 * time.hour)", "2021-01-03 12:00:00 +0000 UTC"),
            ("str(time.parse_time('2021-01-03', format='2006-01-02') - time.parse_time('2021-01-02', format='2006-01-02'))", "24h0m0s"),
            ("time.from_timestamp(0) < time.now()", "True"),
            ("bool(time.time(year=1, month=1, day=1))", "False"),
            ("(time.is_valid_timezone('Europe/Paris'), time.is_valid_timezone('Nowhere/Else'))", "(True, False)"),
            ("{time.second: 1}[time.parse_duration('1s')]", "1"),
        ] {
            assert_eq!(run(program).as_deref(), Ok(want), "{program}");
        }
        for (program, want) in [
            ("time.parse_duration('1d')", "time: unknown unit \"d\" in duration \"1d\""),
            ("time.parse_duration(3)", "got int, want a duration, string, or int"),
            ("time.parse_time('yesterday')", "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""),
            ("time.time(location='Mars/Olympus')", "unknown time zone Mars/Olympus"),
            ("time.hour / 0", "time.duration division by zero"),
        ] {
            let got = run(program).expect_err(program);
            assert!(got.contains(want), "{program}: {got}");
        }
    }
}
