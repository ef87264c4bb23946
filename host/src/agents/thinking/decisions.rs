//! Every tick's decision, stored with the tick (`agent_decisions`) and read back newest first
//! for the operator (`GET /api/v1/public/agents/{agentId}/decisions`, the agent page's
//! conversation) and oldest first for the next prompt.

use serde::Serialize;
use utoipa::ToSchema;

use super::briefing::PastDecision;
use super::verdict::{Action, Verdict};
use crate::agents::AgentError;
use crate::clock::{from_millis, rfc3339};
use crate::crypto::ordered_id;
use crate::db::Store;
use crucible_sql::{LONG_TEXT, Rows};

/// Longest prompt or completion kept with a decision, in bytes.
const MAX_TEXT_BYTES: usize = 8 * 1024;

/// Who decided a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecidedBy {
    Model,
    Rule,
}

impl DecidedBy {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DecidedBy::Model => "model",
            DecidedBy::Rule => "rule",
        }
    }
}

/// One tick's decision, as it is stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecisionRecord {
    pub decided_by: DecidedBy,
    /// Why the rule decided (`no_endpoint`, `no_key`, `budget_exhausted`, `timeout`,
    /// `refused`, `malformed`, `key_unavailable`) and the details, when it did.
    pub why: Option<(&'static str, String)>,
    pub verdict: Verdict,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub latency_ms: Option<u64>,
    pub prompt_hash: Option<String>,
    pub prompt: Option<String>,
    pub completion: Option<String>,
}

impl DecisionRecord {
    /// Tokens this decision spent from the agent's budget.
    pub(crate) fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One decision to store: whose, on which model, when (wall clock and market clock).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewDecision<'a> {
    pub agent_id: &'a str,
    pub model_id: &'a str,
    pub decided_at: i64,
    pub market_ts: i64,
    pub record: &'a DecisionRecord,
}

/// The PostgreSQL types of a decision's columns, in [`insert_all`]'s order. A model's prompt and
/// completion (kilobytes each) travel beside the batch's rows ([`LONG_TEXT`]).
const DECISION_TYPES: [&str; 17] = [
    "text", "text", "int8", "int8", "text", "text", "text", "text", "text", "float8", "text",
    "int8", "int8", "int8", "text", LONG_TEXT, LONG_TEXT,
];

/// Store `decisions` in the caller's transaction, many rows per statement (every row in one on
/// PostgreSQL, [`Rows`]): a batch of ticks writes its decisions in one round trip, not one per
/// agent.
pub(crate) async fn insert_all(
    conn: &mut crucible_sql::Conn<'_>,
    decisions: &[NewDecision<'_>],
) -> sqlx::Result<()> {
    let per_statement = crate::db::rows_per_statement(DECISION_TYPES.len());
    for chunk in decisions.chunks(Rows::per_statement(conn, per_statement)) {
        let mut rows = Rows::new(conn, &DECISION_TYPES);
        for decision in chunk {
            let record = decision.record;
            let (why, why_detail) = match &record.why {
                Some((kind, detail)) => (Some(*kind), Some(detail.as_str())),
                None => (None, None),
            };
            let keep = |text: &Option<String>| {
                text.as_deref()
                    .map(|t| super::verdict::cut(t, MAX_TEXT_BYTES).to_owned())
            };
            rows.push([
                ordered_id("dec", decision.decided_at).into(),
                decision.agent_id.into(),
                decision.decided_at.into(),
                decision.market_ts.into(),
                decision.model_id.into(),
                record.decided_by.as_str().into(),
                why.into(),
                why_detail.into(),
                record.verdict.action.as_str().into(),
                record.verdict.fraction.into(),
                record.verdict.reason.as_deref().into(),
                (record.prompt_tokens as i64).into(),
                (record.completion_tokens as i64).into(),
                record.latency_ms.map(|ms| ms as i64).into(),
                record.prompt_hash.as_deref().into(),
                keep(&record.prompt).into(),
                keep(&record.completion).into(),
            ]);
        }
        let sql = format!(
            "INSERT INTO agent_decisions (id, agent_id, decided_at, market_ts, model_id, decided_by,
                 why, why_detail, action, fraction, reason, prompt_tokens, completion_tokens,
                 latency_ms, prompt_hash, prompt, completion)
             {}",
            rows.insert(0)
        );
        rows.bind(crucible_sql::query(&sql)).execute(conn).await?;
    }
    Ok(())
}

/// The agent's last [`super::briefing::DECISIONS_SHOWN`] decisions, oldest first.
pub(crate) async fn recent(store: &Store, agent_id: &str) -> sqlx::Result<Vec<PastDecision>> {
    let rows: Vec<(i64, String, String, f64, Option<String>)> = sqlx::query_as(
        "SELECT market_ts, decided_by, action, fraction, reason FROM agent_decisions
         WHERE agent_id = $1 ORDER BY decided_at DESC, id DESC LIMIT $2",
    )
    .bind(agent_id)
    .bind(super::briefing::DECISIONS_SHOWN as i64)
    .fetch_all(store.read())
    .await?;
    Ok(rows
        .into_iter()
        .rev()
        .map(
            |(market_ts, decided_by, action, fraction, reason)| PastDecision {
                market_ts,
                decided_by,
                verdict: Verdict {
                    action: Action::parse(&action),
                    fraction,
                    reason,
                },
            },
        )
        .collect())
}

#[derive(Debug, sqlx::FromRow)]
struct DecisionRow {
    id: String,
    decided_at: i64,
    market_ts: i64,
    model_id: String,
    decided_by: String,
    why: Option<String>,
    why_detail: Option<String>,
    action: String,
    fraction: f64,
    reason: Option<String>,
    prompt_tokens: i64,
    completion_tokens: i64,
    latency_ms: Option<i64>,
    prompt_hash: Option<String>,
    prompt: Option<String>,
    completion: Option<String>,
}

/// One decision as its operator sees it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DecisionView {
    pub decision_id: String,
    /// When the tick ran (wall clock).
    pub decided_at: String,
    /// The agent's market clock at the tick.
    pub market_time: String,
    /// The model the agent had (`<vendor>/<model>`), asked or not.
    pub model: String,
    /// `model`: the model's answer was followed; `rule`: the class rule decided.
    #[schema(example = "model")]
    pub decided_by: String,
    /// Why the rule decided: `no_endpoint`, `no_key`, `budget_exhausted`, `timeout`,
    /// `refused`, `malformed` or `key_unavailable`; `null` when the model decided.
    pub why: Option<String>,
    /// The details of `why` (e.g. the provider's status and reason).
    pub why_detail: Option<String>,
    /// `buy`, `sell` or `hold`.
    pub action: String,
    /// Of equity for a buy, of the holding for a sell.
    pub fraction: f64,
    pub reason: Option<String>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub latency_ms: Option<i64>,
    /// SHA-256 (hex) of the request sent (model, personality and message): the key a recorded
    /// backtest replays it by.
    pub prompt_hash: Option<String>,
    /// The user message sent (the system message is the agent's personality).
    pub prompt: Option<String>,
    /// The model's answer, as received.
    pub completion: Option<String>,
}

impl From<DecisionRow> for DecisionView {
    fn from(row: DecisionRow) -> Self {
        DecisionView {
            decision_id: row.id,
            decided_at: rfc3339(from_millis(row.decided_at)),
            market_time: rfc3339(from_millis(row.market_ts)),
            model: row.model_id,
            decided_by: row.decided_by,
            why: row.why,
            why_detail: row.why_detail,
            action: row.action,
            fraction: row.fraction,
            reason: row.reason,
            prompt_tokens: row.prompt_tokens,
            completion_tokens: row.completion_tokens,
            latency_ms: row.latency_ms,
            prompt_hash: row.prompt_hash,
            prompt: row.prompt,
            completion: row.completion,
        }
    }
}

/// Up to `limit` decisions of `agent_id`, newest first, after the decision `before` (the
/// previous page's last `decisionId`).
pub(crate) async fn page(
    store: &Store,
    agent_id: &str,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<DecisionView>, AgentError> {
    if !(1..=200).contains(&limit) {
        return Err(AgentError::invalid("limit", "`limit` must be 1 to 200"));
    }
    let cursor = match before {
        None => (i64::MAX, String::new()),
        Some(id) => {
            let found: Option<(i64,)> = sqlx::query_as(
                "SELECT decided_at FROM agent_decisions WHERE agent_id = $1 AND id = $2",
            )
            .bind(agent_id)
            .bind(id)
            .fetch_optional(store.read())
            .await?;
            let (at,) = found.ok_or_else(|| {
                AgentError::invalid("before", format!("`{id}` is not a decision of this agent"))
            })?;
            (at, id.to_owned())
        }
    };
    let rows: Vec<DecisionRow> = sqlx::query_as(
        "SELECT id, decided_at, market_ts, model_id, decided_by, why, why_detail, action, fraction,
                reason, prompt_tokens, completion_tokens, latency_ms, prompt_hash, prompt, completion
         FROM agent_decisions
         WHERE agent_id = $1 AND (decided_at < $2 OR (decided_at = $2 AND id < $3))
         ORDER BY decided_at DESC, id DESC LIMIT $4",
    )
    .bind(agent_id)
    .bind(cursor.0)
    .bind(cursor.1)
    .bind(limit)
    .fetch_all(store.read())
    .await?;
    Ok(rows.into_iter().map(DecisionView::from).collect())
}
