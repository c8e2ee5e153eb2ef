//! Sizes ("512M") and durations ("30s") as users write them.

use crate::PolicyError;
use serde::{Deserialize, Deserializer};
use std::time::Duration;

/// Parses a size: bytes, or a number with K, M, G, T (powers of 1024), optionally followed by
/// "B" or "iB" (`512M`, `2GiB`, `1.5G`, `4096`).
pub fn parse_size(text: &str) -> Result<u64, PolicyError> {
    let err = || PolicyError::Size {
        value: text.to_string(),
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err());
    }
    let unit = unit.trim();
    let upper = unit.to_ascii_uppercase();
    let base = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let mult: u64 = match base {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(err()),
    };
    if upper == "B" || upper.is_empty() {
        return num.parse::<u64>().map_err(|_| err());
    }
    let value: f64 = num.parse().map_err(|_| err())?;
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(bytes as u64)
}

/// Parses a duration: a number with ms, s, m or h (`500ms`, `30s`, `1.5m`, `2h`); a bare number
/// is seconds.
pub fn parse_duration(text: &str) -> Result<Duration, PolicyError> {
    let err = || PolicyError::Duration {
        value: text.to_string(),
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| err())?;
    let secs = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" | "sec" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(err()),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| err())
}

/// A size in a policy file: an integer number of bytes or a string such as "512M".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeValue(pub u64);

/// A duration in a policy file: an integer number of seconds or a string such as "30s".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurationValue(pub Duration);

#[derive(Deserialize)]
#[serde(untagged)]
enum NumOrText {
    Num(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for SizeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrText::deserialize(d)? {
            NumOrText::Num(n) => Ok(SizeValue(n)),
            NumOrText::Text(t) => parse_size(&t)
                .map(SizeValue)
                .map_err(serde::de::Error::custom),
        }
    }
}

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumOrText::deserialize(d)? {
            NumOrText::Num(n) => Ok(DurationValue(Duration::from_secs(n))),
            NumOrText::Text(t) => parse_duration(&t)
                .map(DurationValue)
                .map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
#[path = "units_tests.rs"]
mod tests;
