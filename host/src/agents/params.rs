//! An agent's strategy parameters: the values its operator chose at creation
//! (`strategy.params`), checked against what its component declares, stored as given, and made
//! whole with the declared defaults on every tick (docs/strategies.md, "Parameters").
//!
//! Only the chosen values are stored, so an agent that chose none follows its strategy's
//! defaults as they change; a stored value the component no longer accepts (a new version of
//! an uploaded strategy narrowed a range) gives way to the default instead of stopping the agent.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::AgentError;
use super::new_agent::StrategyChoice;
use super::runtime::Runtime;
use super::tick::DueAgent;
use crate::db::Store;
use crate::optimize::params::{MAX_NAME_BYTES, ParamSpec, resolve_json, resolve_lenient};
use crate::sandbox::LoadedStrategy;

/// The values as stored (`agents.strategy_params`); none when there are none or they no longer
/// read as a JSON object.
pub(crate) fn stored(column: Option<&str>) -> Map<String, Value> {
    column
        .and_then(|text| serde_json::from_str::<Map<String, Value>>(text).ok())
        .unwrap_or_default()
}

/// Fill `agent`'s tick settings with every parameter `strategy` declares: its chosen value where
/// it still fits, the default otherwise.
pub(crate) fn fill(agent: &mut DueAgent, strategy: &LoadedStrategy) {
    let declared = strategy.params();
    agent.settings.params = if declared.is_empty() {
        Vec::new()
    } else {
        resolve_lenient(declared, &agent.chosen_params)
    };
}

/// Check the values an operator gives a new agent against its component's declaration; the
/// JSON to store (`None` when none were given). A wrong value is refused naming its parameter
/// (`strategy.params.<name>`).
pub(crate) async fn check_chosen(
    store: &Store,
    agents: &Arc<Runtime>,
    class: &str,
    strategy: &StrategyChoice,
    chosen: &Map<String, Value>,
) -> Result<Option<String>, AgentError> {
    if chosen.is_empty() {
        return Ok(None);
    }
    let declared = declared(store, agents, class, strategy).await?;
    resolve_json(&declared, chosen).map_err(|e| {
        // A name no declaration could hold is not echoed back at length.
        if e.name.len() > MAX_NAME_BYTES {
            AgentError::invalid(
                "strategy.params",
                format!("`strategy.params` names a parameter longer than {MAX_NAME_BYTES} bytes; no strategy declares one"),
            )
        } else {
            AgentError::invalid(format!("strategy.params.{}", e.name), e.reason)
        }
    })?;
    serde_json::to_string(chosen)
        .map(Some)
        .map_err(AgentError::internal)
}

/// What the component of `class` / `strategy` declares (loading it if this node has not yet).
pub(crate) async fn declared(
    store: &Store,
    agents: &Arc<Runtime>,
    class: &str,
    strategy: &StrategyChoice,
) -> Result<Vec<ParamSpec>, AgentError> {
    let component = match strategy {
        StrategyChoice::Builtin => None,
        StrategyChoice::Custom(id) => Some(id.as_str()),
    };
    let loaded = super::strategies::load(store, agents, class, component)
        .await
        .map_err(|e| {
            AgentError::Busy(format!(
                "the strategy could not be loaded to check its parameters: {e}"
            ))
        })?;
    Ok(loaded.params().to_vec())
}

/// A declared parameter as the API shows it (`GET /api/v1/public/strategies/params`, the web
/// app's creation form).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = StrategyParam)]
pub(crate) struct ParamView {
    pub name: String,
    pub description: String,
    /// `int`, `float` or `choice`.
    pub kind: &'static str,
    /// The smallest value (`int` and `float`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest value (`int` and `float`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// The values offered (`choice`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// The value an agent gets when it names none.
    #[schema(schema_with = value_schema)]
    pub default: Value,
}

/// A parameter's value: an integer, a number or a string, by its kind.
fn value_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{SchemaType, Type};
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([
            Type::Integer,
            Type::Number,
            Type::String,
        ]))
        .build()
}

impl From<&ParamSpec> for ParamView {
    fn from(spec: &ParamSpec) -> Self {
        use crate::optimize::params::ParamKind;
        let (kind, min, max, choices) = match &spec.kind {
            ParamKind::Int { min, max } => ("int", Some(*min as f64), Some(*max as f64), None),
            ParamKind::Float { min, max } => ("float", Some(*min), Some(*max), None),
            ParamKind::Choice { choices } => ("choice", None, None, Some(choices.clone())),
        };
        ParamView {
            name: spec.name.clone(),
            description: spec.description.clone(),
            kind,
            min,
            max,
            choices,
            default: spec.default.to_json(),
        }
    }
}

/// What a strategy declares, for those creating an agent with it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = StrategyParams)]
pub(crate) struct DeclaredView {
    /// `builtin` or `custom:<strategyId>`, as given.
    pub strategy_type: String,
    pub class: String,
    /// In declaration order; empty when the component declares none (components built before
    /// contract 0.3.0 never do).
    pub params: Vec<ParamView>,
}

/// What the strategy `kind` (`builtin` or `custom:<id>`, one of `account_id`'s uploads) of
/// `class` declares.
pub(crate) async fn declared_view(
    store: &Store,
    agents: &Arc<Runtime>,
    account_id: &str,
    kind: &str,
    class: &str,
) -> Result<DeclaredView, AgentError> {
    if !crate::sandbox::BUILTIN_CLASSES.contains(&class) {
        return Err(AgentError::invalid(
            "class",
            format!(
                "`class` must be one of {}",
                crate::sandbox::BUILTIN_CLASSES.join(", ")
            ),
        ));
    }
    let strategy = super::new_agent::strategy_type(kind).map_err(|invalid| {
        AgentError::invalid("type", invalid.message.replace("strategy.type", "type"))
    })?;
    if let StrategyChoice::Custom(id) = &strategy
        && !super::strategies::owned_by(store, account_id, id).await?
    {
        return Err(AgentError::StrategyNotFound(format!(
            "no uploaded strategy `{id}` on this account"
        )));
    }
    let declared = declared(store, agents, class, &strategy).await?;
    Ok(DeclaredView {
        strategy_type: strategy.type_name(),
        class: class.to_owned(),
        params: declared.iter().map(ParamView::from).collect(),
    })
}
