//! Backtests with a model (`crucible strategy backtest --model …`): each tick's proposal is put
//! to a model the way a live agent's is (`docs/agents.md`), answered by a provider called
//! directly, optionally recorded (`--model-record`), or replayed from a recording
//! (`--model-replay`) so the run can be repeated bit for bit. Without `--model` the class rule
//! decides, as it always did, and the report says so.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;

use crate::agents::thinking::oracles::{DirectOracle, Recording, Replay};
use crate::agents::thinking::{self, Briefing, DecidedBy, Oracle, PastDecision, Question};
use crate::models::{EndpointSetting, Endpoints, ModelRequest, Models};
use crate::paper::OrderRequest;
use crate::sandbox::{ModelCall, ModelFailure, ModelPort, ModelReply, Proposal};
use crate::secret::Secret;

#[derive(Debug, Clone, Args, Default)]
pub(crate) struct ModelArgs {
    /// Ask this model (`<vendor>/<model>`) each tick, as a live agent does; without it the
    /// class rule decides alone.
    #[arg(long = "model", value_name = "VENDOR/MODEL")]
    pub model: Option<String>,
    /// The agent's personality: the system message the model is sent.
    #[arg(long, default_value = "")]
    pub personality: String,
    /// An endpoint for a vendor, `VENDOR=BASE_URL` (repeatable; adds to or replaces the
    /// built-in vendors, as the server's flag does).
    #[arg(long = "model-endpoint", value_parser = crate::models::endpoints::parse_setting)]
    pub model_endpoint: Vec<EndpointSetting>,
    /// The environment variable holding the provider key (never a flag: flags are visible to
    /// every user of the machine).
    #[arg(long = "model-key-env", value_name = "VAR")]
    pub model_key_env: Option<String>,
    /// Save every answer (and failure) as JSON lines keyed by the prompt's hash.
    #[arg(
        long = "model-record",
        value_name = "FILE",
        conflicts_with = "model_replay"
    )]
    pub model_record: Option<PathBuf>,
    /// Answer from a recording instead of calling the model: the same run, bit for bit.
    #[arg(long = "model-replay", value_name = "FILE")]
    pub model_replay: Option<PathBuf>,
    /// How long one call may take, milliseconds.
    #[arg(long = "model-timeout-ms", default_value_t = 20_000)]
    pub model_timeout_ms: u64,
}

/// How a backtest's ticks were decided, for its report.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DecisionTally {
    /// The model asked, or `None` when the class rule decided alone.
    pub model: Option<String>,
    /// `live`, `recorded` (live, saved to a file) or `replayed`; `none` without a model.
    pub source: &'static str,
    /// Ticks of a built-in class the model decided, and those the rule did.
    pub by_model: u64,
    pub by_rule: u64,
    /// Why the rule decided (or, for an uploaded component, why a call failed), by reason.
    pub rule_why: BTreeMap<&'static str, u64>,
    /// An uploaded component's own calls to the model (it decides its ticks itself).
    pub component_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The model side of a backtest: who answers, the agent's last decisions, and the tally.
pub(crate) struct BacktestMind {
    /// Whether the ticks are a built-in class's, which the model decides.
    builtin: bool,
    model_id: String,
    personality: String,
    class: String,
    base: String,
    quote: String,
    interval: String,
    max_allocation: f64,
    oracle: Arc<dyn Oracle>,
    runtime: tokio::runtime::Runtime,
    recent: Vec<PastDecision>,
    tally: DecisionTally,
    /// What an uploaded component's own calls asked, answered by the same source.
    port: Arc<OraclePort>,
}

/// Who answers a backtest's questions, built once and shared by its runs.
#[derive(Clone)]
pub(crate) struct ModelSource {
    model_id: String,
    personality: String,
    oracle: Arc<dyn Oracle>,
    source: &'static str,
}

impl ModelSource {
    /// The source `args` describe, or `None` when no model is asked.
    pub(crate) fn from_args(args: &ModelArgs) -> anyhow::Result<Option<ModelSource>> {
        let Some(model_id) = &args.model else {
            if args.model_replay.is_some() || args.model_record.is_some() {
                bail!("--model-record and --model-replay need --model VENDOR/MODEL");
            }
            return Ok(None);
        };
        let Some((vendor, _)) = ModelRequest::split_model_id(model_id) else {
            bail!("--model must look like <vendor>/<model>, e.g. ollama/llama3.2");
        };
        let (oracle, source): (Arc<dyn Oracle>, &'static str) = match &args.model_replay {
            Some(path) => (
                Arc::new(
                    Replay::open(path)
                        .with_context(|| format!("read the recording {}", path.display()))?,
                ),
                "replayed",
            ),
            None => {
                let endpoints = Endpoints::with_settings(&args.model_endpoint);
                if endpoints.get(vendor).is_none() {
                    bail!(
                        "no endpoint for `{vendor}`: add --model-endpoint {vendor}=BASE_URL (known: {})",
                        endpoints.vendor_list()
                    );
                }
                let key = match &args.model_key_env {
                    Some(var) => Some(Secret::new(std::env::var(var).with_context(|| {
                        format!("--model-key-env {var}: the variable is not set")
                    })?)),
                    None => None,
                };
                let models = Models::new(
                    endpoints,
                    BTreeMap::new(),
                    Duration::from_millis(args.model_timeout_ms),
                    Arc::new(crate::clock::SystemClock),
                )?;
                let direct = DirectOracle { models, key };
                match &args.model_record {
                    Some(path) => (
                        Arc::new(
                            Recording::create(direct, path)
                                .with_context(|| format!("create {}", path.display()))?,
                        ),
                        "recorded",
                    ),
                    None => (Arc::new(direct), "live"),
                }
            }
        };
        Ok(Some(ModelSource {
            model_id: model_id.clone(),
            personality: args.personality.clone(),
            oracle,
            source,
        }))
    }

    pub(crate) fn model_id(&self) -> &str {
        &self.model_id
    }

    pub(crate) fn personality(&self) -> &str {
        &self.personality
    }

    /// A mind for one backtest of `class` on `pair` at `interval`. Only a built-in class's
    /// ticks are put to the model (`builtin`), as on the server; an uploaded component decides
    /// alone and asks through [`BacktestMind::port`] if it wants to.
    pub(crate) fn mind(
        &self,
        builtin: bool,
        class: &str,
        pair: &crate::market::Pair,
        interval: &str,
        max_allocation: f64,
    ) -> anyhow::Result<BacktestMind> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(BacktestMind {
            builtin,
            model_id: self.model_id.clone(),
            personality: self.personality.clone(),
            class: class.to_owned(),
            base: pair.base.clone(),
            quote: pair.quote.clone(),
            interval: interval.to_owned(),
            max_allocation,
            oracle: self.oracle.clone(),
            runtime,
            recent: Vec::new(),
            tally: DecisionTally {
                model: Some(self.model_id.clone()),
                source: self.source,
                ..DecisionTally::default()
            },
            port: Arc::new(OraclePort {
                oracle: self.oracle.clone(),
                model_id: self.model_id.clone(),
                personality: self.personality.clone(),
                tally: Mutex::new(DecisionTally::default()),
            }),
        })
    }
}

impl BacktestMind {
    pub(crate) fn model_id(&self) -> &str {
        &self.model_id
    }

    pub(crate) fn personality(&self) -> &str {
        &self.personality
    }

    /// The port an uploaded component's `model.complete` calls reach.
    pub(crate) fn port(&self) -> Arc<dyn ModelPort> {
        self.port.clone()
    }

    /// How the run's ticks were decided, and what its component's calls cost.
    pub(crate) fn into_tally(self) -> DecisionTally {
        let mut tally = self.tally;
        tally.add(&self.port.tally.lock().unwrap_or_else(|p| p.into_inner()));
        tally
    }
    /// Decide one tick: the model's orders if it answers, else the rule's (see `docs/agents.md`).
    pub(crate) fn review(&mut self, proposal: Proposal<'_>) -> Vec<OrderRequest> {
        if !self.builtin {
            return proposal.orders;
        }
        let rule = thinking::proposal_of(&proposal.orders, &proposal.portfolio, proposal.price);
        let question = Question {
            account_id: "backtest",
            model_id: &self.model_id,
            personality: &self.personality,
            tokens_left: u64::MAX,
            briefing: Briefing {
                class: &self.class,
                base: &self.base,
                quote: &self.quote,
                interval: &self.interval,
                max_allocation: self.max_allocation,
                candles: proposal.candles,
                portfolio: proposal.portfolio,
                proposal: &rule,
                recent: &self.recent,
            },
            rule_orders: &proposal.orders,
        };
        let thought = self
            .runtime
            .block_on(thinking::think(self.oracle.as_ref(), question));
        let record = &thought.record;
        self.tally.prompt_tokens += record.prompt_tokens;
        self.tally.completion_tokens += record.completion_tokens;
        match (record.decided_by, &record.why) {
            (DecidedBy::Model, _) => self.tally.by_model += 1,
            (DecidedBy::Rule, why) => {
                self.tally.by_rule += 1;
                let why = why.as_ref().map_or("unknown", |(why, _)| *why);
                *self.tally.rule_why.entry(why).or_default() += 1;
            }
        }
        self.recent.push(PastDecision {
            market_ts: proposal.now,
            decided_by: record.decided_by.as_str().to_owned(),
            verdict: record.verdict.clone(),
        });
        let keep = self.recent.len().saturating_sub(thinking::DECISIONS_SHOWN);
        self.recent.drain(..keep);
        thought.orders
    }
}

impl DecisionTally {
    /// Add another run's tally (an evaluation's runs, all asking the same model).
    pub(crate) fn add(&mut self, other: &DecisionTally) {
        self.by_model += other.by_model;
        self.by_rule += other.by_rule;
        self.component_calls += other.component_calls;
        for (why, n) in &other.rule_why {
            *self.rule_why.entry(why).or_default() += n;
        }
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// An uploaded component's model calls in a backtest, answered by the run's source with the
/// personality first, as the server's agent port does.
struct OraclePort {
    oracle: Arc<dyn Oracle>,
    model_id: String,
    personality: String,
    tally: Mutex<DecisionTally>,
}

impl ModelPort for OraclePort {
    fn complete(
        &self,
        call: ModelCall,
    ) -> Pin<Box<dyn Future<Output = Result<ModelReply, ModelFailure>> + Send + '_>> {
        Box::pin(async move {
            let asked = match thinking::request_of(&self.model_id, &self.personality, call) {
                Ok(request) => self.oracle.ask("backtest", &request).await,
                Err(error) => Err(error),
            };
            let mut tally = self.tally.lock().unwrap_or_else(|p| p.into_inner());
            tally.component_calls += 1;
            match asked {
                Ok(completion) => {
                    tally.prompt_tokens += completion.prompt_tokens;
                    tally.completion_tokens += completion.completion_tokens;
                    Ok(thinking::reply_of(&completion))
                }
                Err(error) => {
                    *tally.rule_why.entry(thinking::why_of(&error)).or_default() += 1;
                    Err(thinking::failure_of(error))
                }
            }
        })
    }
}

/// The tally of a backtest in which the rule decided alone.
pub(crate) fn rule_only() -> DecisionTally {
    DecisionTally {
        model: None,
        source: "none",
        ..DecisionTally::default()
    }
}
