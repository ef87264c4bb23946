//! Tunable parameters: declare each one once as a `const`, list them in
//! [`Strategy::params`](crate::Strategy::params), read them on every tick with `.get(ctx)`.
//!
//! ```
//! use crucible_sdk::prelude::*;
//!
//! const FAST: IntParam = IntParam::new("fast", "fast EMA period, candles", 3, 30, 9);
//! const BAND: FloatParam = FloatParam::new("band", "EMA gap to act on, x volatility", 0.0, 2.0, 0.5);
//! const MODE: ChoiceParam = ChoiceParam::new("mode", "what a cross means", &["trend", "revert"], "trend");
//!
//! let ctx = Context::default(); // no values given: every parameter reads its default
//! assert_eq!(FAST.get(&ctx), 9);
//! assert_eq!(BAND.get(&ctx), 0.5);
//! assert_eq!(MODE.get(&ctx), "trend");
//! let ctx = ctx.with_param("fast", ParamValue::Int(12));
//! assert_eq!(FAST.get(&ctx), 12);
//! ```
//!
//! The host checks every value against the declaration before a tick (an agent is created with
//! `strategy.params`; `crucible strategy optimize` samples within the ranges), so `.get` only
//! falls back to the default when the strategy runs outside the host (native tests) or a value
//! is missing; it also clamps into the declared range, so a strategy never sees one outside it.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::__bindings::crucible::strategy::types as wit;
use crate::Context;

/// One parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Choice(String),
}

/// What values a parameter takes.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// An integer from `min` to `max`, both included.
    Int { min: i64, max: i64 },
    /// A real number from `min` to `max`, both included.
    Float { min: f64, max: f64 },
    /// One of these strings.
    Choice(Vec<String>),
}

/// A declared parameter (what [`Strategy::params`](crate::Strategy::params) returns).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub description: String,
    pub kind: ParamKind,
    pub default: ParamValue,
}

/// The values of one tick, by name, in declaration order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params(pub Vec<(String, ParamValue)>);

impl Params {
    /// The value named `name`, if the host passed one.
    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// An integer parameter, declared as a `const`.
#[derive(Debug, Clone, Copy)]
pub struct IntParam {
    pub name: &'static str,
    pub description: &'static str,
    pub min: i64,
    pub max: i64,
    pub default: i64,
}

impl IntParam {
    pub const fn new(
        name: &'static str,
        description: &'static str,
        min: i64,
        max: i64,
        default: i64,
    ) -> Self {
        IntParam {
            name,
            description,
            min,
            max,
            default,
        }
    }

    /// This tick's value (the default when none was passed), within `min..=max`.
    pub fn get(&self, ctx: &Context) -> i64 {
        match ctx.params.get(self.name) {
            Some(ParamValue::Int(v)) => (*v).clamp(self.min, self.max),
            _ => self.default,
        }
    }

    /// [`get`](Self::get) as a count (periods, candles): never below 1.
    pub fn get_usize(&self, ctx: &Context) -> usize {
        self.get(ctx).max(1) as usize
    }

    pub fn spec(&self) -> ParamSpec {
        ParamSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            kind: ParamKind::Int {
                min: self.min,
                max: self.max,
            },
            default: ParamValue::Int(self.default),
        }
    }
}

/// A real parameter, declared as a `const`.
#[derive(Debug, Clone, Copy)]
pub struct FloatParam {
    pub name: &'static str,
    pub description: &'static str,
    pub min: f64,
    pub max: f64,
    pub default: f64,
}

impl FloatParam {
    pub const fn new(
        name: &'static str,
        description: &'static str,
        min: f64,
        max: f64,
        default: f64,
    ) -> Self {
        FloatParam {
            name,
            description,
            min,
            max,
            default,
        }
    }

    /// This tick's value (the default when none was passed), within `min..=max`.
    pub fn get(&self, ctx: &Context) -> f64 {
        match ctx.params.get(self.name) {
            Some(ParamValue::Float(v)) if v.is_finite() => v.clamp(self.min, self.max),
            _ => self.default,
        }
    }

    pub fn spec(&self) -> ParamSpec {
        ParamSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            kind: ParamKind::Float {
                min: self.min,
                max: self.max,
            },
            default: ParamValue::Float(self.default),
        }
    }
}

/// A parameter that takes one of a few names, declared as a `const`.
#[derive(Debug, Clone, Copy)]
pub struct ChoiceParam {
    pub name: &'static str,
    pub description: &'static str,
    pub choices: &'static [&'static str],
    pub default: &'static str,
}

impl ChoiceParam {
    pub const fn new(
        name: &'static str,
        description: &'static str,
        choices: &'static [&'static str],
        default: &'static str,
    ) -> Self {
        ChoiceParam {
            name,
            description,
            choices,
            default,
        }
    }

    /// This tick's choice (the default when none was passed or it is not one of `choices`).
    pub fn get(&self, ctx: &Context) -> &'static str {
        match ctx.params.get(self.name) {
            Some(ParamValue::Choice(v)) => self
                .choices
                .iter()
                .find(|c| **c == v.as_str())
                .copied()
                .unwrap_or(self.default),
            _ => self.default,
        }
    }

    pub fn spec(&self) -> ParamSpec {
        ParamSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            kind: ParamKind::Choice(self.choices.iter().map(|c| c.to_string()).collect()),
            default: ParamValue::Choice(self.default.to_string()),
        }
    }
}

impl Context {
    /// This context with `name` set to `value` (for native tests of a strategy).
    pub fn with_param(mut self, name: &str, value: ParamValue) -> Self {
        self.params.0.retain(|(n, _)| n != name);
        self.params.0.push((name.to_string(), value));
        self
    }
}

/// Check a declaration by the rules the host applies when it loads a component (it refuses the
/// upload otherwise): at most 32 parameters; names `[a-z][a-z0-9_]*` of at most 48 bytes, each
/// declared once; descriptions of at most 200 bytes; a non-empty, finite range or 1 to 64
/// distinct choices of 1 to 48 bytes; a default of the parameter's kind, within it. For a
/// strategy's native tests: `assert_eq!(check(&MyStrategy::params()), Ok(()))`.
pub fn check(specs: &[ParamSpec]) -> Result<(), String> {
    if specs.len() > 32 {
        return Err(alloc::format!("{} parameters; at most 32", specs.len()));
    }
    for (i, spec) in specs.iter().enumerate() {
        let name = spec.name.as_str();
        let mut bytes = name.bytes();
        let well_named = name.len() <= 48
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !well_named {
            return Err(alloc::format!(
                "`{name}`: names are [a-z][a-z0-9_]*, at most 48 bytes"
            ));
        }
        if specs[..i].iter().any(|s| s.name == spec.name) {
            return Err(alloc::format!("`{name}` is declared twice"));
        }
        if spec.description.len() > 200 {
            return Err(alloc::format!(
                "`{name}`: its description is over 200 bytes"
            ));
        }
        let fits = match (&spec.kind, &spec.default) {
            (ParamKind::Int { min, max }, ParamValue::Int(v)) => {
                min <= max && (min..=max).contains(&v)
            }
            (ParamKind::Float { min, max }, ParamValue::Float(v)) => {
                min.is_finite() && max.is_finite() && min <= max && (min..=max).contains(&v)
            }
            (ParamKind::Choice(choices), ParamValue::Choice(v)) => {
                (1..=64).contains(&choices.len())
                    && choices
                        .iter()
                        .enumerate()
                        .all(|(j, c)| (1..=48).contains(&c.len()) && !choices[..j].contains(c))
                    && choices.contains(v)
            }
            _ => false,
        };
        if !fits {
            return Err(alloc::format!(
                "`{name}`: its range or choices are malformed, or its default is outside them"
            ));
        }
    }
    Ok(())
}

pub(crate) fn from_wit(params: Vec<wit::Param>) -> Params {
    Params(
        params
            .into_iter()
            .map(|p| {
                let value = match p.value {
                    wit::ParamValue::Int(i) => ParamValue::Int(i),
                    wit::ParamValue::Float(f) => ParamValue::Float(f),
                    wit::ParamValue::Choice(s) => ParamValue::Choice(s),
                };
                (p.name, value)
            })
            .collect(),
    )
}

fn value_into_wit(value: ParamValue) -> wit::ParamValue {
    match value {
        ParamValue::Int(i) => wit::ParamValue::Int(i),
        ParamValue::Float(f) => wit::ParamValue::Float(f),
        ParamValue::Choice(s) => wit::ParamValue::Choice(s),
    }
}

pub(crate) fn spec_into_wit(spec: ParamSpec) -> wit::ParamSpec {
    wit::ParamSpec {
        name: spec.name,
        description: spec.description,
        kind: match spec.kind {
            ParamKind::Int { min, max } => wit::ParamKind::Int(wit::IntRange { min, max }),
            ParamKind::Float { min, max } => wit::ParamKind::Float(wit::FloatRange { min, max }),
            ParamKind::Choice(choices) => wit::ParamKind::Choice(choices),
        },
        default: value_into_wit(spec.default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: IntParam = IntParam::new("fast", "", 3, 30, 9);
    const BAND: FloatParam = FloatParam::new("band", "", 0.0, 2.0, 0.5);
    const MODE: ChoiceParam = ChoiceParam::new("mode", "", &["trend", "revert"], "trend");

    #[test]
    fn values_are_read_clamped_and_defaulted() {
        let ctx = Context::default()
            .with_param("fast", ParamValue::Int(100))
            .with_param("band", ParamValue::Float(1.25))
            .with_param("mode", ParamValue::Choice("revert".into()));
        assert_eq!(FAST.get(&ctx), 30);
        assert_eq!(BAND.get(&ctx), 1.25);
        assert_eq!(MODE.get(&ctx), "revert");
        // A value of the wrong kind, or an unknown choice, reads as the default.
        let ctx = ctx
            .with_param("fast", ParamValue::Float(4.0))
            .with_param("mode", ParamValue::Choice("moon".into()));
        assert_eq!(FAST.get(&ctx), 9);
        assert_eq!(MODE.get(&ctx), "trend");
        assert_eq!(FAST.spec().default, ParamValue::Int(9));
    }

    #[test]
    fn declarations_are_checked_as_the_host_does() {
        assert_eq!(check(&[FAST.spec(), BAND.spec(), MODE.spec()]), Ok(()));
        let twice = IntParam::new("fast", "", 1, 5, 2);
        assert!(check(&[FAST.spec(), twice.spec()]).is_err());
        assert!(check(&[IntParam::new("Fast", "", 1, 5, 2).spec()]).is_err());
        assert!(check(&[IntParam::new("fast", "", 1, 5, 9).spec()]).is_err());
        assert!(check(&[FloatParam::new("band", "", 2.0, 1.0, 1.5).spec()]).is_err());
        assert!(check(&[ChoiceParam::new("mode", "", &["a", "a"], "a").spec()]).is_err());
        assert!(check(&[ChoiceParam::new("mode", "", &["a"], "b").spec()]).is_err());
    }
}
