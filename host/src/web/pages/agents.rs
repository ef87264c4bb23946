//! Agents and webhook deliveries, for the signed-in operator. The pages act with the session
//! alone: `agents.js` calls the v1 agents API through the web app's same-origin, CSRF-checked
//! `/web-api/v1/…` routes, which act for the signed-in account (docs/web.md, "Agents without a
//! key"). No page asks for, receives or holds a key secret. The server renders the forms, the
//! choices they offer (built-in class or uploaded strategy, model vendors) and the places the
//! answers go.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use crate::web::Web;
use crate::web::internal::Visitor;
use crate::web::layout::{
    Page, data_island, failure, human, sign_in_first, status_region, url_escape,
};

const CLASSES: [(&str, &str); 6] = [
    ("fighter", "Fighter — technical analysis"),
    ("ranger", "Ranger — social sentiment"),
    ("mage", "Mage — on-chain analysis"),
    ("defender", "Defender — capital preservation"),
    ("gambler", "Gambler — high-risk momentum"),
    ("rogue", "Rogue — contrarian, mean reversion"),
];
const INTERVALS: [&str; 5] = ["5m", "15m", "1h", "4h", "1d"];

/// Example model ids of the vendors people use; the creation form suggests those of the
/// vendors this host has an endpoint for (and `vendor/` for any other it has). Any well-formed
/// `vendor/model` is accepted all the same.
const MODEL_EXAMPLES: [&str; 10] = [
    "openai/gpt-4o",
    "openai/gpt-4o-mini",
    "anthropic/claude-sonnet-4",
    "openrouter/meta-llama/llama-3.1-70b-instruct",
    "groq/llama-3.1-8b-instant",
    "together/meta-llama/Llama-3.3-70B-Instruct-Turbo",
    "mistral/mistral-large-latest",
    "deepseek/deepseek-chat",
    "xai/grok-2",
    "ollama/llama3.1",
];

/// The model ids the creation form suggests: examples of each vendor the host can call.
fn model_suggestions(web: &Web) -> Vec<String> {
    web.state
        .models
        .endpoints()
        .vendors()
        .flat_map(|vendor| {
            let prefix = format!("{vendor}/");
            let examples: Vec<String> = MODEL_EXAMPLES
                .iter()
                .filter(|model| model.starts_with(&prefix))
                .map(|model| (*model).to_owned())
                .collect();
            if examples.is_empty() {
                vec![prefix]
            } else {
                examples
            }
        })
        .collect()
}

/// The strategy choices of the creation form: the class's built-in strategy, then each
/// component the account uploaded (by name, with the id the API needs as the value).
fn strategy_choices(uploaded: &Result<Value, crate::web::internal::Failed>) -> Markup {
    html! {
        div.field { label for="agent-strategy" { "Strategy" }
            select #agent-strategy name="strategy.type" {
                option value="builtin" selected { "The class's built-in strategy" }
                @if let Ok(list) = uploaded {
                    @for strategy in list["data"].as_array().into_iter().flatten() {
                        @if let Some(kind) = strategy["strategyType"].as_str() {
                            option value=(kind) {
                                "Uploaded: " (strategy["name"].as_str().unwrap_or(kind))
                            }
                        }
                    }
                }
            }
            @if let Err(failed) = uploaded {
                p.error { "Your uploaded strategies could not be listed: " (human(failed)) }
            }
        }
    }
}

fn shell(visitor: &Visitor, title: &str, main: Markup, on_simnet: bool) -> Response {
    Page {
        title,
        visitor,
        scripts: &["uPlot.iife.min.js", "agents.js"],
        styles: &["uPlot.min.css"],
        main: html! {
            (main)
            (data_island("agents-config", &serde_json::json!({"simnet": on_simnet})))
        },
    }
    .render(StatusCode::OK)
}

pub(crate) async fn list(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/agents");
    }
    let uploaded = web.api.get("/api/v1/public/strategies", &visitor).await;
    let main = html! {
        section aria-labelledby="agents-title" {
            h2 #agents-title { "Your agents" }
            div #agents-list aria-live="polite" { p.muted { "Loading your agents…" } }
        }
        section aria-labelledby="create-title" {
            h2 #create-title { "Create an agent" }
            form.card #create-agent data-api="POST /web-api/v1/public/agents/create" data-next-agent="true" {
                div.field { label for="agent-name" { "Name" } input #agent-name name="name" required maxlength="64"; }
                div.field { label for="agent-username" { "Username (letters, digits, underscores)" }
                    input #agent-username name="username" required pattern="[A-Za-z0-9_]+" autocomplete="off"; }
                div.field { label for="agent-class" { "Class" } select #agent-class name="class" {
                    @for (value, label) in CLASSES { option value=(value) { (label) } } } }
                div.field { label for="agent-model" { "Model (" code { "vendor/model" } ": pick one or type any)" }
                    input #agent-model name="modelId" required list="model-suggestions" placeholder="openai/gpt-4o" autocomplete="off";
                    datalist #model-suggestions { @for model in model_suggestions(&web) { option value=(model) {} } } }
                (strategy_choices(&uploaded))
                // Filled by agents.js with what the chosen class and strategy declare.
                fieldset #agent-params data-field="strategy.params" aria-live="polite" {
                    legend { "Strategy parameters" }
                    p.muted { "Loading the strategy's parameters…" }
                }
                fieldset data-field="strategy.tokenPair" {
                    legend { "Token pair" }
                    label { "Base " input name="strategy.tokenPair.base" required value="SOL" size="6"; }
                    " "
                    label { "Quote " input name="strategy.tokenPair.quote" required value="USDC" size="6"; }
                }
                div.field { label for="agent-interval" { "Time interval" } select #agent-interval name="strategy.timeInterval" data-type="optional" {
                    option value="" { "Default" }
                    @for interval in INTERVALS { option value=(interval) { (interval) } } } }
                div.field { label for="agent-allocation" { "Maximum allocation (percent, 1 to 100)" }
                    input #agent-allocation name="strategy.maxAllocation" type="number" min="1" max="100" step="any" data-type="number"; }
                div.field { label for="agent-personality" { "Personality (optional)" }
                    textarea #agent-personality name="personality" rows="2" data-type="optional" {} }
                div.field.check { input #agent-paper type="checkbox" name="isPaperTrading" data-type="bool" checked;
                    label for="agent-paper" { "Paper trading (untick for a live agent that swaps on chain)" } }
                div.field { label for="agent-avatar" { "Avatar URL (optional)" }
                    input #agent-avatar name="avatarUrl" type="url" data-type="optional"; }
                button type="submit" { "Create agent" }
                (status_region("create-status"))
            }
        }
        section aria-labelledby="upload-title" {
            h2 #upload-title { "Upload a strategy component" }
            form.card #upload-strategy {
                div.field { label for="strategy-name" { "Name" } input #strategy-name name="name" required maxlength="64"; }
                div.field { label for="strategy-file" { "WebAssembly component (.wasm)" }
                    input #strategy-file name="component" type="file" accept=".wasm,application/wasm" required; }
                button type="submit" { "Upload" }
                (status_region("upload-status"))
            }
            div #strategies-list {}
        }
    };
    shell(&visitor, "Agents", main, web.state.chain.simnet().is_some())
}

pub(crate) async fn detail(
    State(web): State<Web>,
    visitor: Visitor,
    Path(agent_id): Path<String>,
) -> Response {
    if !visitor.signed_in() {
        return sign_in_first(&format!("/agents/{agent_id}"));
    }
    let on_simnet = web.state.chain.simnet().is_some();
    // The page is titled by the agent's name; an agent that is not the operator's is as
    // missing as one that does not exist, as the API answers.
    let path = format!("/api/v1/public/agents/{}", url_escape(&agent_id));
    let name = match web.api.get(&path, &visitor).await {
        Ok(found) => found["data"]["name"]
            .as_str()
            .unwrap_or(&agent_id)
            .to_owned(),
        Err(failed) => return failure(&visitor, "Agent not found", &failed),
    };
    let main = html! {
        div #agent data-agent=(agent_id) {
            p.muted #agent-loading { "Loading this agent…" }
            div #agent-body hidden {
                dl.facts {
                    dt { "Status" } dd { span #agent-status.badge {} " " span #agent-reason {} }
                    dt { "Class" } dd #agent-class {}
                    dt { "Strategy" } dd #agent-strategy {}
                    dt { "Mode" } dd #agent-mode {}
                    dt { "Wallet" } dd { code.wrap #agent-wallet {} }
                    dt { "Ticks" } dd #agent-ticks {}
                    dt { "Faults" } dd #agent-faults {}
                    dt { "Last fault" } dd #agent-last-fault {}
                    dt { "Last tick" } dd #agent-last-tick {}
                    dt { "Model" } dd { span #agent-model-status.badge {} " " span #agent-model-name {} }
                    dt { "Tokens today" } dd #agent-tokens {}
                    dt { "Equity" } dd #agent-equity {}
                    dt { "Trades" } dd #agent-trades {}
                    dt { "Refused orders" } dd #agent-refused {}
                }
                div.actions {
                    button #agent-start type="button" { "Start" }
                    button #agent-stop type="button" { "Stop" }
                    @if on_simnet {
                        button #agent-fund type="button" title="Simnet only: airdrop SOL for fees and some USDC" { "Fund on simnet" }
                    }
                }
                (status_region("agent-action-status"))
                div.side-by-side {
                    section aria-labelledby="equity-title" {
                        h2 #equity-title { "Equity" }
                        p.muted { "The agent's hourly equity marks, then its account sampled while this page is open." }
                        div #equity-chart role="img" aria-label="The agent's equity over time" {}
                    }
                    section aria-labelledby="decisions-title" {
                        h2 #decisions-title { "Decisions" }
                        p.muted { "Each tick: what the agent's model was told and answered, or why its class rule decided. Newest first." }
                        ol #agent-decisions.conversation aria-live="polite" {}
                        button #agent-more-decisions type="button" hidden { "Older decisions" }
                    }
                }
                section aria-labelledby="trades-title" {
                    h2 #trades-title { "Trades" }
                    p.muted { "Newest first, with the strategy's reason"
                        @if !on_simnet { " and, for a live agent, its transaction" } "." }
                    div.scroll { table #agent-trade-list {
                        thead { tr { th { "When" } th { "Side" } th.num { "Amount" } th.num { "Price" } th.num { "Value" }
                            th.num { "Fee" } th.num { "Realized" } th { "Reason" } th { "Transaction" } } }
                        tbody {}
                    } }
                    button #agent-more-trades type="button" hidden { "Older trades" }
                }
                section aria-labelledby="perf-title" {
                    h2 #perf-title { "Performance by period" }
                    div.scroll { table #agent-performance {
                        thead { tr { th { "Period" } th.num { "PnL" } th.num { "PnL %" } th.num { "Win rate" }
                            th.num { "Trades" } th.num { "Average trade" } } }
                        tbody {}
                    } }
                }
            }
        }
    };
    shell(&visitor, &name, main, on_simnet)
}

pub(crate) async fn webhooks(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/webhooks");
    }
    let main = html! {
        section aria-labelledby="deliveries-title" {
            h2 #deliveries-title { "Webhook deliveries" }
            div #deliveries aria-live="polite" { p.muted { "Loading your deliveries…" } }
        }
    };
    shell(
        &visitor,
        "Webhooks",
        main,
        web.state.chain.simnet().is_some(),
    )
}
