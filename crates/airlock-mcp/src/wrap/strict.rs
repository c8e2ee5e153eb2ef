//! Strict JSON for the relay: a line is read into the one object every parser agrees on, or
//! refused. Parsers disagree on duplicate keys (serde_json and Go keep the last, Python's
//! `object_pairs_hook` users and many C parsers the first) and on case (Go's `encoding/json`
//! matches struct fields case-insensitively, with Unicode folding: `Name`, `NAME` and `nameſ`…
//! all fill `Name`). So a duplicate key anywhere is refused, and in the objects the gate reads,
//! so is a key that folds to the same as another key or as a key the gate knows. What the relay
//! forwards is the checked object, re-serialised ([`canonical_line`]), never the raw bytes.

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

/// Why a line is not a message the relay can pass on. Each says what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    #[error("the line is not JSON (send one JSON-RPC message per line, as UTF-8)")]
    NotJson,
    #[error("the message is not a JSON object; send one JSON-RPC message per line")]
    NotAnObject,
    #[error("a JSON-RPC batch (an array); send one message per line")]
    Batch,
    #[error("the message's {0:?} must be {1}")]
    BadField(&'static str, &'static str),
    #[error("tools/call is a request: give it an \"id\" (a string or a number)")]
    CallWithoutId,
    #[error("tools/call needs \"params\" with the tool's \"name\" as a string")]
    CallWithoutName,
    #[error("the key {key:?} appears twice in {at}; send each key once")]
    DuplicateKey { at: String, key: String },
    #[error(
        "the keys {first:?} and {second:?} in {at} differ only by case, and a server that \
         matches keys case-insensitively would read either; send one of them"
    )]
    CaseCollision {
        at: String,
        first: String,
        second: String,
    },
    #[error(
        "the key {key:?} in {at} differs from {known:?} only by case, and a server that matches \
         keys case-insensitively would read it as {known:?}; spell it {known:?}"
    )]
    CaseVariant {
        at: String,
        key: String,
        known: &'static str,
    },
}

/// Where in a message a value sits, for error messages (`the message`, `params`,
/// `result.tools[2]`). Built on the stack while parsing; rendered only on an error.
#[derive(Clone, Copy)]
enum Place<'a> {
    Root,
    Key(&'a Place<'a>, &'a str),
    Index(&'a Place<'a>, usize),
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Root => f.write_str("the message"),
            Place::Key(Place::Root, k) => write!(f, "{k}"),
            Place::Key(parent, k) => write!(f, "{parent}.{k}"),
            Place::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// Reads one value, refusing duplicate keys; the first problem found is left in `found`.
struct StrictSeed<'a> {
    place: Place<'a>,
    found: &'a RefCell<Option<Malformed>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let place = Place::Index(&self.place, items.len());
            let seed = StrictSeed {
                place,
                found: self.found,
            };
            match seq.next_element_seed(seed)? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let seed = StrictSeed {
                place: Place::Key(&self.place, &key),
                found: self.found,
            };
            let value = map.next_value_seed(seed)?;
            if out.contains_key(&key) {
                *self.found.borrow_mut() = Some(Malformed::DuplicateKey {
                    at: self.place.to_string(),
                    key,
                });
                return Err(A::Error::custom("duplicate key"));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

/// Parses one line, refusing anything but a single JSON value without duplicate keys at any
/// depth (nesting is bounded by serde_json's recursion limit).
pub fn parse_strict(raw: &[u8]) -> Result<Value, Malformed> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(raw);
    let seed = StrictSeed {
        place: Place::Root,
        found: &found,
    };
    let parsed = seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match (parsed, found.into_inner()) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(why)) => Err(why),
        (Err(_), None) => Err(Malformed::NotJson),
    }
}

/// `s` folded as Go's `encoding/json` folds field names (each character lowered, then
/// uppercased, so `ſ` meets `S` and the Kelvin sign meets `K`), a superset of ASCII case.
fn fold(s: &str) -> String {
    s.chars()
        .flat_map(char::to_lowercase)
        .flat_map(char::to_uppercase)
        .collect()
}

/// Checks the keys of one object the gate reads (at `at`, such as `params`): no two keys may
/// fold to the same, and a key that folds to one of `known` must be spelled exactly so.
pub fn check_keys(
    obj: &Map<String, Value>,
    at: &str,
    known: &[&'static str],
) -> Result<(), Malformed> {
    let mut seen: HashMap<String, &str> = HashMap::with_capacity(obj.len());
    for key in obj.keys() {
        let folded = fold(key);
        if let Some(k) = known.iter().find(|k| **k != key && fold(k) == folded) {
            return Err(Malformed::CaseVariant {
                at: at.to_string(),
                key: key.clone(),
                known: k,
            });
        }
        if let Some(first) = seen.insert(folded, key) {
            return Err(Malformed::CaseCollision {
                at: at.to_string(),
                first: first.to_string(),
                second: key.clone(),
            });
        }
    }
    Ok(())
}

/// The value as the relay sends it on: compact JSON (keys in sorted order) and a newline.
pub fn canonical_line(v: &Value) -> Vec<u8> {
    let mut out = v.to_string().into_bytes();
    out.push(b'\n');
    out
}

#[cfg(test)]
#[path = "strict_tests.rs"]
mod tests;
