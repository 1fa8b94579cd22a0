//! The output edge's last check: no NaN or infinity is ever printed.
//!
//! Every report is a `Serialize` value; [`ensure_finite`] walks it with a
//! serializer that looks only at floats and names the first field that is
//! not finite. Inputs are range-checked at the boundary, so a non-finite
//! number here is a bug in a model: the CLI stops with exit code 1 and
//! `internal error: non-finite value in field X` instead of printing `NaN`,
//! `inf` or (in JSON) a silent `null`. It lives in the core so every front
//! end (CLI, simulator, fuzz checks) applies the same guard.

use serde::ser::{self, Serialize};
use std::fmt;

/// Fails with the path of the first non-finite float in `value` (`plans[0].usd_per_hour`).
///
/// ```
/// assert_eq!(gpuplan_core::ensure_finite(&[1.0, f64::NAN]), Err("[1] (= NaN)".to_string()));
/// ```
pub fn ensure_finite<T: Serialize + ?Sized>(value: &T) -> Result<(), String> {
    let mut walker = Walker::default();
    match value.serialize(&mut walker) {
        Ok(()) => Ok(()),
        Err(Found(path)) => Err(path),
    }
}

/// The path of the non-finite value, carried as the serializer's error.
#[derive(Debug)]
struct Found(String);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        Found(format!("(cannot serialize: {msg})"))
    }
}

/// Walks a value, keeping the path to the current field.
#[derive(Default)]
struct Walker {
    path: Vec<String>,
}

impl Walker {
    fn path(&self) -> String {
        let mut out = String::new();
        for part in &self.path {
            if !part.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
        if out.is_empty() {
            out.push_str("(top level)");
        }
        out
    }

    fn float(&self, v: f64) -> Result<(), Found> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(Found(format!("{} (= {v})", self.path())))
        }
    }

    fn nested<T: Serialize + ?Sized>(&mut self, part: String, value: &T) -> Result<(), Found> {
        self.path.push(part);
        let result = value.serialize(&mut *self);
        self.path.pop();
        result
    }
}

/// Serializer methods that hold no float: nothing to check.
macro_rules! nothing_to_check {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, _v: $ty) -> Result<(), Found> { Ok(()) })*
    };
}

impl<'a> ser::Serializer for &'a mut Walker {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Map<'a>;
    type SerializeStruct = &'a mut Walker;
    type SerializeStructVariant = &'a mut Walker;

    nothing_to_check!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.float(v)
    }
    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Found> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.nested(variant.to_string(), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, Found> {
        Ok(Seq {
            walker: self,
            index: 0,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Seq<'a>, Found> {
        self.serialize_seq(None)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Seq<'a>, Found> {
        self.serialize_seq(None)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Seq<'a>, Found> {
        self.serialize_seq(None)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Map<'a>, Found> {
        Ok(Map {
            walker: self,
            key: String::new(),
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Found> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, Found> {
        Ok(self)
    }
}

/// A list or tuple: elements are named `[i]`.
struct Seq<'a> {
    walker: &'a mut Walker,
    index: usize,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let part = format!("[{}]", self.index);
        self.index += 1;
        self.walker.nested(part, value)
    }
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Seq<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

/// A map: values are named by their key as JSON would print it.
struct Map<'a> {
    walker: &'a mut Walker,
    key: String,
}

impl ser::SerializeMap for Map<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        self.key = serde_json::to_value(key)
            .ok()
            .and_then(|k| k.as_str().map(str::to_string))
            .unwrap_or_else(|| "[key]".to_string());
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let key = std::mem::take(&mut self.key);
        self.walker.nested(key, value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Walker {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.nested(key.to_string(), value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Walker {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.nested(key.to_string(), value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Inner {
        ok: f64,
        ttft_ms: f64,
    }

    #[derive(Serialize)]
    struct Report {
        name: String,
        count: u64,
        maybe: Option<f64>,
        plans: Vec<Inner>,
        by_kind: BTreeMap<String, f64>,
    }

    fn report() -> Report {
        Report {
            name: "x".into(),
            count: 3,
            maybe: None,
            plans: vec![
                Inner {
                    ok: 1.0,
                    ttft_ms: 2.0,
                },
                Inner {
                    ok: 1.0,
                    ttft_ms: 2.0,
                },
            ],
            by_kind: BTreeMap::from([("inference".to_string(), 0.5)]),
        }
    }

    #[test]
    fn finite_reports_pass() {
        assert_eq!(ensure_finite(&report()), Ok(()));
    }

    #[test]
    fn the_guard_names_the_first_non_finite_field() {
        let mut r = report();
        r.plans[1].ttft_ms = f64::NAN;
        assert_eq!(
            ensure_finite(&r),
            Err("plans[1].ttft_ms (= NaN)".to_string())
        );
        let mut r = report();
        r.maybe = Some(f64::INFINITY);
        assert_eq!(ensure_finite(&r), Err("maybe (= inf)".to_string()));
        let mut r = report();
        r.by_kind.insert("training".into(), f64::NEG_INFINITY);
        assert_eq!(
            ensure_finite(&r),
            Err("by_kind.training (= -inf)".to_string())
        );
        assert_eq!(
            ensure_finite(&f64::NAN),
            Err("(top level) (= NaN)".to_string())
        );
    }
}
