//! A strategy's tunable parameters: what a component declares (name, kind, range or choices,
//! default), the values an agent or a trial chooses, and the checks between the two.
//!
//! The declaration comes from the component (`params` of `crucible:strategy@0.3.0`); values come
//! from an operator (`strategy.params` of a new agent, JSON) or from a sampler. Either way a
//! strategy sees every declared parameter on every tick, in declaration order, defaults filled in.

use serde::{Deserialize, Serialize};

/// Most parameters one component may declare: enough for any strategy a person tunes, few
/// enough that a search over them means something.
pub const MAX_PARAMS: usize = 32;
/// Longest parameter name, bytes.
pub const MAX_NAME_BYTES: usize = 48;
/// Longest description, bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 200;
/// Most choices one `choice` parameter may offer.
pub const MAX_CHOICES: usize = 64;

/// What values a parameter takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParamKind {
    /// An integer from `min` to `max`, both included.
    Int { min: i64, max: i64 },
    /// A real number from `min` to `max`, both included.
    Float { min: f64, max: f64 },
    /// One of these strings.
    Choice { choices: Vec<String> },
}

/// One parameter's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Choice(String),
}

impl ParamValue {
    /// The value as JSON (an integer, a number or a string).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            ParamValue::Int(i) => serde_json::Value::from(*i),
            ParamValue::Float(f) => serde_json::Value::from(*f),
            ParamValue::Choice(s) => serde_json::Value::from(s.as_str()),
        }
    }
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(i) => write!(f, "{i}"),
            // Shortest text that reads back as the same number: reports stay byte-identical.
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Choice(s) => f.write_str(s),
        }
    }
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSpec {
    /// `[a-z][a-z0-9_]*`, at most [`MAX_NAME_BYTES`].
    pub name: String,
    /// What it changes, for the person tuning it.
    pub description: String,
    #[serde(flatten)]
    pub kind: ParamKind,
    /// The value when none is chosen; within the kind's range.
    pub default: ParamValue,
}

/// One chosen value, by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub value: ParamValue,
}

/// What is wrong with a declaration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("parameter `{name}`: {reason}")]
pub struct DeclarationError {
    pub name: String,
    pub reason: String,
}

/// What is wrong with a chosen value: which parameter, and why, in words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{reason}")]
pub struct ValueError {
    /// The parameter's name as given.
    pub name: String,
    pub reason: String,
}

impl ParamSpec {
    /// Whether `value` is of this parameter's kind and within its range.
    pub fn check(&self, value: &ParamValue) -> Result<(), String> {
        match (&self.kind, value) {
            (ParamKind::Int { min, max }, ParamValue::Int(v)) => {
                if v < min || v > max {
                    return Err(format!("must be an integer from {min} to {max}"));
                }
            }
            (ParamKind::Float { min, max }, ParamValue::Float(v)) => {
                if !v.is_finite() || v < min || v > max {
                    return Err(format!("must be a number from {min} to {max}"));
                }
            }
            (ParamKind::Choice { choices }, ParamValue::Choice(v)) => {
                if !choices.contains(v) {
                    return Err(format!("must be one of {}", choices.join(", ")));
                }
            }
            (kind, _) => return Err(format!("must be {}", kind_words(kind))),
        }
        Ok(())
    }

    /// Read a JSON value as this parameter's kind (an integral number is a valid float).
    pub fn read_json(&self, value: &serde_json::Value) -> Result<ParamValue, String> {
        let read = match (&self.kind, value) {
            (ParamKind::Int { .. }, serde_json::Value::Number(n)) => match n.as_i64() {
                Some(i) => ParamValue::Int(i),
                None => return Err(format!("must be {}", kind_words(&self.kind))),
            },
            (ParamKind::Float { .. }, serde_json::Value::Number(n)) => match n.as_f64() {
                Some(f) => ParamValue::Float(f),
                None => return Err(format!("must be {}", kind_words(&self.kind))),
            },
            (ParamKind::Choice { .. }, serde_json::Value::String(s)) => {
                ParamValue::Choice(s.clone())
            }
            (kind, _) => return Err(format!("must be {}", kind_words(kind))),
        };
        self.check(&read)?;
        Ok(read)
    }
}

fn kind_words(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Int { min, max } => format!("an integer from {min} to {max}"),
        ParamKind::Float { min, max } => format!("a number from {min} to {max}"),
        ParamKind::Choice { choices } => format!("one of {}", choices.join(", ")),
    }
}

/// Check what a component declares: names well formed and distinct, ranges sound, defaults
/// within them. A component whose declaration fails is refused at load.
pub fn check_declaration(specs: &[ParamSpec]) -> Result<(), DeclarationError> {
    let fail = |name: &str, reason: String| DeclarationError {
        name: name.to_string(),
        reason,
    };
    if specs.len() > MAX_PARAMS {
        return Err(fail(
            "*",
            format!("{} parameters declared; at most {MAX_PARAMS}", specs.len()),
        ));
    }
    for (i, spec) in specs.iter().enumerate() {
        let name = spec.name.as_str();
        if !valid_name(name) {
            return Err(fail(
                name,
                format!("names are [a-z][a-z0-9_]*, at most {MAX_NAME_BYTES} bytes"),
            ));
        }
        if specs[..i].iter().any(|s| s.name == spec.name) {
            return Err(fail(name, "declared twice".into()));
        }
        if spec.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(fail(
                name,
                format!("its description is over {MAX_DESCRIPTION_BYTES} bytes"),
            ));
        }
        match &spec.kind {
            ParamKind::Int { min, max } if min > max => {
                return Err(fail(name, format!("its range {min}..={max} is empty")));
            }
            ParamKind::Float { min, max }
                if !(min.is_finite() && max.is_finite() && min <= max) =>
            {
                return Err(fail(
                    name,
                    format!("its range {min}..={max} is not finite and ordered"),
                ));
            }
            ParamKind::Choice { choices } => {
                if choices.is_empty() || choices.len() > MAX_CHOICES {
                    return Err(fail(
                        name,
                        format!("it must offer 1 to {MAX_CHOICES} choices"),
                    ));
                }
                for (j, choice) in choices.iter().enumerate() {
                    if choice.is_empty() || choice.len() > MAX_NAME_BYTES {
                        return Err(fail(
                            name,
                            format!("choice {choice:?} must be 1 to {MAX_NAME_BYTES} bytes"),
                        ));
                    }
                    if choices[..j].contains(choice) {
                        return Err(fail(name, format!("choice {choice:?} is offered twice")));
                    }
                }
            }
            _ => {}
        }
        spec.check(&spec.default)
            .map_err(|reason| fail(name, format!("its default {}: {reason}", spec.default)))?;
    }
    Ok(())
}

fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= MAX_NAME_BYTES
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Every declared parameter with the value `given` names for it, or its default; in declaration
/// order. A name the declaration lacks, or a value of the wrong kind or out of range, is refused
/// naming the parameter.
pub fn resolve_json(
    specs: &[ParamSpec],
    given: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<Param>, ValueError> {
    if let Some(unknown) = given.keys().find(|k| !specs.iter().any(|s| &s.name == *k)) {
        let declared: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        return Err(ValueError {
            name: unknown.clone(),
            reason: if declared.is_empty() {
                format!("`{unknown}` is not a parameter: this strategy declares none")
            } else {
                format!(
                    "`{unknown}` is not a parameter of this strategy (it declares {})",
                    declared.join(", ")
                )
            },
        });
    }
    specs
        .iter()
        .map(|spec| {
            let value = match given.get(&spec.name) {
                Some(value) => spec.read_json(value).map_err(|reason| ValueError {
                    name: spec.name.clone(),
                    reason: format!("`{}` {reason}", spec.name),
                })?,
                None => spec.default.clone(),
            };
            Ok(Param {
                name: spec.name.clone(),
                value,
            })
        })
        .collect()
}

/// Every declared parameter at its default.
pub fn defaults(specs: &[ParamSpec]) -> Vec<Param> {
    specs
        .iter()
        .map(|s| Param {
            name: s.name.clone(),
            value: s.default.clone(),
        })
        .collect()
}

/// Values stored earlier (e.g. an agent's, as JSON) made whole against the declaration as it is
/// now: values that no longer fit, or whose parameter is gone, give way to the defaults, so a
/// component re-declaring its parameters never stops an agent.
pub fn resolve_lenient(
    specs: &[ParamSpec],
    stored: &serde_json::Map<String, serde_json::Value>,
) -> Vec<Param> {
    specs
        .iter()
        .map(|spec| Param {
            name: spec.name.clone(),
            value: stored
                .get(&spec.name)
                .and_then(|v| spec.read_json(v).ok())
                .unwrap_or_else(|| spec.default.clone()),
        })
        .collect()
}

/// Chosen values as a JSON object (what is stored and shown).
pub fn to_json(params: &[Param]) -> serde_json::Map<String, serde_json::Value> {
    params
        .iter()
        .map(|p| (p.name.clone(), p.value.to_json()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs() -> Vec<ParamSpec> {
        vec![
            ParamSpec {
                name: "fast".into(),
                description: "fast EMA period".into(),
                kind: ParamKind::Int { min: 2, max: 50 },
                default: ParamValue::Int(9),
            },
            ParamSpec {
                name: "band".into(),
                description: String::new(),
                kind: ParamKind::Float { min: 0.0, max: 2.0 },
                default: ParamValue::Float(0.5),
            },
            ParamSpec {
                name: "mode".into(),
                description: String::new(),
                kind: ParamKind::Choice {
                    choices: vec!["trend".into(), "revert".into()],
                },
                default: ParamValue::Choice("trend".into()),
            },
        ]
    }

    fn given(value: serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn values_resolve_in_declaration_order_with_defaults_filled_in() {
        let params =
            resolve_json(&specs(), &given(json!({"mode": "revert", "fast": 12}))).expect("valid");
        let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["fast", "band", "mode"]);
        assert_eq!(params[0].value, ParamValue::Int(12));
        assert_eq!(params[1].value, ParamValue::Float(0.5));
        assert_eq!(params[2].value, ParamValue::Choice("revert".into()));
        // An integral number is a valid float.
        let params = resolve_json(&specs(), &given(json!({"band": 1}))).expect("valid");
        assert_eq!(params[1].value, ParamValue::Float(1.0));
    }

    #[test]
    fn a_bad_value_is_refused_naming_its_parameter() {
        for (body, name, words) in [
            (json!({"fast": 51}), "fast", "from 2 to 50"),
            (json!({"fast": 9.5}), "fast", "an integer"),
            (json!({"fast": "9"}), "fast", "an integer"),
            (json!({"band": -0.1}), "band", "from 0 to 2"),
            (json!({"mode": "moon"}), "mode", "one of trend, revert"),
            (json!({"slow": 21}), "slow", "not a parameter"),
        ] {
            let err = resolve_json(&specs(), &given(body.clone())).expect_err("refused");
            assert_eq!(err.name, name, "{body}");
            assert!(err.reason.contains(words), "{body}: {}", err.reason);
        }
    }

    #[test]
    fn declarations_are_checked() {
        assert!(check_declaration(&specs()).is_ok());
        let mut bad = specs();
        bad[1].name = "fast".into();
        assert!(
            check_declaration(&bad)
                .expect_err("dup")
                .reason
                .contains("twice")
        );
        let mut bad = specs();
        bad[0].name = "Fast".into();
        assert!(check_declaration(&bad).is_err());
        let mut bad = specs();
        bad[0].default = ParamValue::Int(100);
        assert!(
            check_declaration(&bad)
                .expect_err("default")
                .reason
                .contains("default")
        );
        let mut bad = specs();
        bad[1].kind = ParamKind::Float {
            min: 1.0,
            max: f64::NAN,
        };
        assert!(check_declaration(&bad).is_err());
        let mut bad = specs();
        bad[2].kind = ParamKind::Choice { choices: vec![] };
        assert!(check_declaration(&bad).is_err());
    }

    #[test]
    fn stored_values_that_no_longer_fit_give_way_to_defaults() {
        let params = resolve_lenient(
            &specs(),
            &given(json!({"fast": 500, "band": 1.5, "gone": 1})),
        );
        assert_eq!(params[0].value, ParamValue::Int(9));
        assert_eq!(params[1].value, ParamValue::Float(1.5));
        assert_eq!(to_json(&params)["band"], json!(1.5));
    }
}
