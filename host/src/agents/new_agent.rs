//! Parsing the body of `POST /api/v1/public/agents/create` into a [`NewAgent`]:
//! every rule checked here, each violation naming its field, so nothing invalid reaches storage.
//!
//! The body is read as loose JSON first so a wrong type is reported against its field
//! (`details.field`) rather than as a generic parse error.

use serde_json::{Map, Value};

use crate::domain::{HttpUrl, Label};
use crate::market::{Interval, Pair};
use crate::optimize::params::MAX_PARAMS;
use crate::sandbox::BUILTIN_CLASSES;

/// A validated agent to create.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewAgent {
    pub name: String,
    pub username: String,
    pub class: String,
    pub model_id: String,
    pub strategy: StrategyChoice,
    /// `strategy.params`: values for the component's declared parameters, checked against the
    /// declaration by the service (the parser cannot see the component).
    pub params: Map<String, Value>,
    pub pair: Pair,
    pub interval: Interval,
    pub max_allocation: f64,
    pub personality: String,
    pub avatar_url: Option<String>,
    /// `false`: a live agent, whose orders are real swaps from its wallet.
    pub is_paper_trading: bool,
    /// `modelBudget.tokensPerDay`: tokens its model may spend per UTC day (`None`: the default).
    pub tokens_per_day: Option<u64>,
}

/// Largest daily token budget an agent may set (a hundred million: far above any real need,
/// low enough that counting can never overflow).
pub(crate) const MAX_TOKENS_PER_DAY: u64 = 100_000_000;

/// Which component runs the agent's ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StrategyChoice {
    /// The class's built-in strategy (`strategy.type = "builtin"`).
    Builtin,
    /// A component the account uploaded (`"custom:<id>"`, the component's SHA-256).
    Custom(String),
}

impl StrategyChoice {
    pub(crate) fn type_name(&self) -> String {
        match self {
            StrategyChoice::Builtin => "builtin".to_owned(),
            StrategyChoice::Custom(id) => format!("custom:{id}"),
        }
    }
}

/// A rule broken: the field (dotted path) and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub field: &'static str,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Invalid {
    Invalid {
        field,
        message: message.into(),
    }
}

pub(crate) const MAX_PERSONALITY_CHARS: usize = 4000;
pub(crate) const DEFAULT_INTERVAL: Interval = Interval::H1;
pub(crate) const DEFAULT_MAX_ALLOCATION: f64 = 100.0;

/// Parse a create body. `known_pair` says whether the market quotes a pair.
pub(crate) fn parse(body: &Value, known_pair: impl Fn(&Pair) -> bool) -> Result<NewAgent, Invalid> {
    let Some(body) = body.as_object() else {
        return Err(invalid("body", "the body must be a JSON object"));
    };
    let name = Label::parse("name", &required_string(body, "name")?, 64)
        .map_err(|message| invalid("name", message))?
        .into_inner();
    let username = username(&required_string(body, "username")?)?;
    let class = required_string(body, "class")?;
    if !BUILTIN_CLASSES.contains(&class.as_str()) {
        return Err(invalid(
            "class",
            format!("`class` must be one of {}", BUILTIN_CLASSES.join(", ")),
        ));
    }
    let model_id = model_id(&required_string(body, "modelId")?)?;

    let Some(strategy) = body.get("strategy") else {
        return Err(invalid("strategy", "`strategy` is required"));
    };
    let Some(strategy) = strategy.as_object() else {
        return Err(invalid("strategy", "`strategy` must be an object"));
    };
    let choice = strategy_type(&required_string(strategy, "type").map_err(|e| Invalid {
        field: "strategy.type",
        ..e
    })?)?;
    let pair = token_pair(strategy.get("tokenPair"), &known_pair)?;
    let params = match optional(strategy, "params") {
        None => Map::new(),
        Some(Value::Object(params)) if params.len() <= MAX_PARAMS => params.clone(),
        Some(Value::Object(_)) => {
            return Err(invalid(
                "strategy.params",
                format!("`strategy.params` names at most {MAX_PARAMS} parameters"),
            ));
        }
        Some(_) => {
            return Err(invalid(
                "strategy.params",
                "`strategy.params` must be an object of parameter values, e.g. {\"fast\": 12}",
            ));
        }
    };
    let interval = match optional(strategy, "timeInterval") {
        None => DEFAULT_INTERVAL,
        Some(Value::String(raw)) => raw.parse().map_err(|_| {
            invalid(
                "strategy.timeInterval",
                "`strategy.timeInterval` must be one of 5m, 15m, 1h, 4h, 1d",
            )
        })?,
        Some(_) => {
            return Err(invalid(
                "strategy.timeInterval",
                "`strategy.timeInterval` must be a string such as \"1h\"",
            ));
        }
    };
    let max_allocation = match optional(strategy, "maxAllocation") {
        None => DEFAULT_MAX_ALLOCATION,
        Some(value) => value
            .as_f64()
            .filter(|pct| (1.0..=100.0).contains(pct))
            .ok_or_else(|| {
                invalid(
                    "strategy.maxAllocation",
                    "`strategy.maxAllocation` must be a number from 1 to 100 (percent)",
                )
            })?,
    };

    let personality = match optional(body, "personality") {
        None => String::new(),
        Some(Value::String(text)) if text.chars().count() <= MAX_PERSONALITY_CHARS => text.clone(),
        Some(Value::String(_)) => {
            return Err(invalid(
                "personality",
                format!("`personality` must be at most {MAX_PERSONALITY_CHARS} characters"),
            ));
        }
        Some(_) => return Err(invalid("personality", "`personality` must be a string")),
    };
    let is_paper_trading = match optional(body, "isPaperTrading") {
        None => true,
        Some(Value::Bool(paper)) => *paper,
        Some(_) => {
            return Err(invalid(
                "isPaperTrading",
                "`isPaperTrading` must be a boolean",
            ));
        }
    };
    let avatar_url = match optional(body, "avatarUrl") {
        None => None,
        Some(Value::String(raw)) => Some(
            HttpUrl::parse("avatarUrl", raw)
                .map_err(|message| invalid("avatarUrl", message))?
                .into_inner(),
        ),
        Some(_) => return Err(invalid("avatarUrl", "`avatarUrl` must be a URL string")),
    };
    let tokens_per_day = match optional(body, "modelBudget") {
        None => None,
        Some(Value::Object(budget)) => match optional(budget, "tokensPerDay") {
            None => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .filter(|tokens| *tokens <= MAX_TOKENS_PER_DAY)
                    .ok_or_else(|| {
                        invalid(
                            "modelBudget.tokensPerDay",
                            format!(
                                "`modelBudget.tokensPerDay` must be a whole number from 0 to {MAX_TOKENS_PER_DAY}"
                            ),
                        )
                    })?,
            ),
        },
        Some(_) => {
            return Err(invalid(
                "modelBudget",
                "`modelBudget` must be an object such as {\"tokensPerDay\": 200000}",
            ));
        }
    };
    Ok(NewAgent {
        name,
        username,
        class,
        model_id,
        strategy: choice,
        params,
        pair,
        interval,
        max_allocation,
        personality,
        avatar_url,
        is_paper_trading,
        tokens_per_day,
    })
}

/// The create body as the OpenAPI document states it, built from the rules [`parse`] checks
/// (the handler reads loose JSON so each violation names its field). Optional members may be
/// `null`, which counts as absent; members it does not know are ignored.
pub(crate) struct NewAgentBody;

impl utoipa::PartialSchema for NewAgentBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        use utoipa::openapi::{Ref, RefOr};
        let text = || ObjectBuilder::new().schema_type(Type::String);
        let nullable = |kind: Type| SchemaType::from_iter([kind, Type::Null]);
        let pair = ObjectBuilder::new()
            .property(
                "base",
                text().enum_values(Some(crate::market::KNOWN_PAIRS.map(|(base, ..)| base))),
            )
            .required("base")
            .property("quote", text().enum_values(Some(["USDC"])))
            .required("quote")
            .description(Some("A pair the market quotes"));
        let strategy = ObjectBuilder::new()
            .property(
                "type",
                text()
                    .pattern(Some("^(builtin|custom:[0-9a-f]{64})$"))
                    .description(Some(
                        "`builtin` (the class's strategy) or `custom:<strategyId>` (a component \
                         this account uploaded with POST /api/v1/public/strategies; any other id \
                         is 400 `VALIDATION_ERROR` naming `strategy.type`)",
                    )),
            )
            .required("type")
            .property("tokenPair", pair)
            .required("tokenPair")
            .property(
                "timeInterval",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::String))
                    .enum_values(Some(
                        Interval::ALL.map(|interval| serde_json::Value::from(interval.as_str())),
                    ))
                    .description(Some("Default `1h`")),
            )
            .property(
                "maxAllocation",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::Number))
                    .minimum(Some(1.0))
                    .maximum(Some(100.0))
                    .description(Some(
                        "Percent of the wallet one order may use (default 100)",
                    )),
            )
            .property(
                "params",
                ObjectBuilder::new()
                    .schema_type(nullable(Type::Object))
                    .max_properties(Some(MAX_PARAMS))
                    .additional_properties(Some(ObjectBuilder::new().schema_type(
                        SchemaType::from_iter([Type::Integer, Type::Number, Type::String]),
                    )))
                    .description(Some(
                        "Values for the strategy's tunable parameters, by name (what the \
                         component declares: GET /api/v1/public/strategies/params). Parameters \
                         not named keep their defaults; an unknown name, a value of the wrong \
                         kind or out of range is 400 `VALIDATION_ERROR` naming \
                         `strategy.params.<name>`",
                    )),
            );
        let label =
            "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x1f\\x7f-\\x9f]*$";
        RefOr::T(
            ObjectBuilder::new()
                .property(
                    "name",
                    text()
                        .min_length(Some(1))
                        .max_length(Some(64))
                        .pattern(Some(label)),
                )
                .required("name")
                .property("username", text().pattern(Some("^[A-Za-z0-9_]{3,32}$")))
                .required("username")
                .property("class", text().enum_values(Some(BUILTIN_CLASSES)))
                .required("class")
                .property(
                    "modelId",
                    text()
                        .max_length(Some(128))
                        .pattern(Some("^[A-Za-z0-9._-]+/[A-Za-z0-9._:-]+$"))
                        .description(Some("`<vendor>/<model>`, e.g. `openai/gpt-4o`")),
                )
                .required("modelId")
                .property("strategy", strategy)
                .required("strategy")
                .property(
                    "personality",
                    ObjectBuilder::new()
                        .schema_type(nullable(Type::String))
                        .max_length(Some(MAX_PERSONALITY_CHARS)),
                )
                .property(
                    "modelBudget",
                    ObjectBuilder::new()
                        .schema_type(nullable(Type::Object))
                        .property(
                            "tokensPerDay",
                            ObjectBuilder::new()
                                .schema_type(nullable(Type::Integer))
                                .minimum(Some(0.0))
                                .maximum(Some(MAX_TOKENS_PER_DAY as f64)),
                        )
                        .description(Some(
                            "Tokens the agent's model may spend per UTC day (default 200000)",
                        )),
                )
                .property(
                    "isPaperTrading",
                    ObjectBuilder::new()
                        .schema_type(nullable(Type::Boolean))
                        .description(Some("Default `true`; `false`: orders are real swaps")),
                )
                .property(
                    "avatarUrl",
                    utoipa::openapi::schema::OneOfBuilder::new()
                        .item(ObjectBuilder::new().schema_type(Type::Null))
                        .item(Ref::from_schema_name("HttpUrl")),
                )
                .into(),
        )
    }
}

impl utoipa::ToSchema for NewAgentBody {
    fn name() -> std::borrow::Cow<'static, str> {
        "NewAgentRequest".into()
    }

    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        use utoipa::PartialSchema;
        schemas.push((HttpUrl::name().into_owned(), HttpUrl::schema()));
    }
}

/// A present, non-null member.
fn optional<'a>(object: &'a Map<String, Value>, field: &str) -> Option<&'a Value> {
    object.get(field).filter(|value| !value.is_null())
}

fn required_string(object: &Map<String, Value>, field: &'static str) -> Result<String, Invalid> {
    match optional(object, field) {
        None => Err(invalid(field, format!("`{field}` is required"))),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(invalid(field, format!("`{field}` must be a string"))),
    }
}

/// 3–32 letters, digits or underscores.
fn username(raw: &str) -> Result<String, Invalid> {
    let ok =
        (3..=32).contains(&raw.len()) && raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(raw.to_owned())
    } else {
        Err(invalid(
            "username",
            "`username` must be 3 to 32 letters, digits or underscores",
        ))
    }
}

/// `<vendor>/<model>`, e.g. `anthropic/claude-sonnet-4` or `meta-llama/llama-3.1-70b`.
fn model_id(raw: &str) -> Result<String, Invalid> {
    let part_ok = |part: &str, extra: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c) || extra.contains(c))
    };
    let ok = raw.len() <= 128
        && match raw.split_once('/') {
            Some((vendor, model)) => part_ok(vendor, "") && part_ok(model, ":"),
            None => false,
        };
    if ok {
        Ok(raw.to_owned())
    } else {
        Err(invalid(
            "modelId",
            "`modelId` must look like `<vendor>/<model>`, e.g. `openai/gpt-4o` (letters, digits, - _ .)",
        ))
    }
}

pub(crate) fn strategy_type(raw: &str) -> Result<StrategyChoice, Invalid> {
    if raw == "builtin" {
        return Ok(StrategyChoice::Builtin);
    }
    if let Some(id) = raw.strip_prefix("custom:")
        && id.len() == 64
        && id
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        return Ok(StrategyChoice::Custom(id.to_owned()));
    }
    Err(invalid(
        "strategy.type",
        "`strategy.type` must be `builtin` (the class's strategy) or `custom:<strategyId>` \
         (a component uploaded with POST /api/v1/public/strategies)",
    ))
}

fn token_pair(value: Option<&Value>, known: impl Fn(&Pair) -> bool) -> Result<Pair, Invalid> {
    let field = "strategy.tokenPair";
    let shape = || {
        invalid(
            field,
            "`strategy.tokenPair` must be {\"base\": \"SOL\", \"quote\": \"USDC\"}",
        )
    };
    let object = value.and_then(Value::as_object).ok_or_else(shape)?;
    let symbol = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| (1..=12).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric()))
            .ok_or_else(shape)
    };
    let pair = Pair::new(symbol("base")?, symbol("quote")?);
    if !known(&pair) {
        return Err(invalid(
            field,
            format!(
                "the market does not quote {pair}; try SOL/USDC, BTC/USDC, ETH/USDC, BONK/USDC or JUP/USDC"
            ),
        ));
    }
    Ok(pair)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({
            "name": "Ada", "username": "ada_1", "class": "fighter", "modelId": "openai/gpt-4o",
            "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"}}
        })
    }

    fn field_of(body: Value) -> &'static str {
        parse(&body, |pair| pair.base == "SOL")
            .expect_err("invalid")
            .field
    }

    #[test]
    fn a_minimal_body_gets_the_defaults() {
        let agent = parse(&valid(), |_| true).expect("valid");
        assert_eq!(agent.interval, Interval::H1);
        assert_eq!(agent.max_allocation, 100.0);
        assert_eq!(agent.strategy, StrategyChoice::Builtin);
        assert_eq!(agent.pair, Pair::new("SOL", "USDC"));
    }

    #[test]
    fn each_rule_names_its_field() {
        let with = |pointer: &str, value: Value| {
            let mut body = valid();
            *body.pointer_mut(pointer).expect("pointer") = value;
            body
        };
        assert_eq!(field_of(with("/name", json!(""))), "name");
        assert_eq!(field_of(with("/username", json!("a b"))), "username");
        assert_eq!(field_of(with("/username", json!("ab"))), "username");
        assert_eq!(field_of(with("/class", json!("wizard"))), "class");
        assert_eq!(field_of(with("/modelId", json!("gpt4"))), "modelId");
        assert_eq!(field_of(with("/modelId", json!(7))), "modelId");
        assert_eq!(
            field_of(with("/strategy/type", json!("magic"))),
            "strategy.type"
        );
        assert_eq!(
            field_of(with(
                "/strategy/tokenPair",
                json!({"base": "DOGE", "quote": "USDC"})
            )),
            "strategy.tokenPair"
        );
        let mut body = valid();
        body["strategy"]["timeInterval"] = json!("2h");
        assert_eq!(field_of(body), "strategy.timeInterval");
        let mut body = valid();
        body["strategy"]["maxAllocation"] = json!(0);
        assert_eq!(field_of(body), "strategy.maxAllocation");
        let mut body = valid();
        body["personality"] = json!("x".repeat(MAX_PERSONALITY_CHARS + 1));
        assert_eq!(field_of(body), "personality");
        let mut body = valid();
        body["avatarUrl"] = json!("ftp://x");
        assert_eq!(field_of(body), "avatarUrl");
        let mut body = valid();
        body["isPaperTrading"] = json!("no");
        assert_eq!(field_of(body), "isPaperTrading");
        let mut body = valid();
        body.as_object_mut().expect("object").remove("strategy");
        assert_eq!(field_of(body), "strategy");
    }

    #[test]
    fn custom_strategies_are_referenced_by_their_hash() {
        let id = "ab".repeat(32);
        assert_eq!(
            strategy_type(&format!("custom:{id}")),
            Ok(StrategyChoice::Custom(id))
        );
        assert!(strategy_type("custom:xyz").is_err());
    }
}
