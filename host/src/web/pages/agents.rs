//! Agents and webhook deliveries. The agents API takes a v1 key (`X-API-Key`), not the session
//! cookie, so these pages are shells that `agents.js` fills by calling `/api/v1` with the key the
//! operator chose for this tab (kept in the tab's `sessionStorage`, never sent to the server
//! otherwise). The server renders the forms and the places the answers go.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};

use crate::web::Web;
use crate::web::internal::Visitor;
use crate::web::layout::{Page, data_island, sign_in_first, status_region};

const CLASSES: [(&str, &str); 6] = [
    ("fighter", "Fighter — technical analysis"),
    ("ranger", "Ranger — social sentiment"),
    ("mage", "Mage — on-chain analysis"),
    ("defender", "Defender — capital preservation"),
    ("gambler", "Gambler — high-risk momentum"),
    ("rogue", "Rogue — contrarian, mean reversion"),
];
const INTERVALS: [&str; 5] = ["5m", "15m", "1h", "4h", "1d"];

/// Where the tab's v1 key is chosen; every agents page starts with it.
fn key_picker() -> Markup {
    html! {
        section #key-picker.card aria-labelledby="key-title" {
            h2 #key-title { "Agent key for this tab" }
            p #key-state.muted { "No agent key chosen in this tab yet." }
            form #key-form {
                div.field { label for="v1-key" { "v1 key (" code { "svc_live_…" } ", with agents permissions)" }
                    input #v1-key type="password" autocomplete="off" required; }
                button type="submit" { "Use this key" }
                " "
                button #key-forget type="button" { "Forget it" }
                " "
                a href="/keys" { "Create one" }
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
            (key_picker())
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
    let main = html! {
        section aria-labelledby="agents-title" {
            h2 #agents-title { "Your agents" }
            div #agents-list aria-live="polite" { p.muted { "Choose an agent key above to list your agents." } }
        }
        section aria-labelledby="create-title" {
            h2 #create-title { "Create an agent" }
            form.card #create-agent data-api="POST /api/v1/public/agents/create" data-v1="true" data-next-agent="true" {
                div.field { label for="agent-name" { "Name" } input #agent-name name="name" required maxlength="64"; }
                div.field { label for="agent-username" { "Username (letters, digits, underscores)" }
                    input #agent-username name="username" required pattern="[A-Za-z0-9_]+" autocomplete="off"; }
                div.field { label for="agent-class" { "Class" } select #agent-class name="class" {
                    @for (value, label) in CLASSES { option value=(value) { (label) } } } }
                div.field { label for="agent-model" { "Model (" code { "vendor/model" } ")" }
                    input #agent-model name="modelId" required placeholder="openai/gpt-4o"; }
                div.field { label for="agent-strategy" { "Strategy type (" code { "builtin" } " or " code { "custom:<strategyId>" } ")" }
                    input #agent-strategy name="strategy.type" required value="builtin"; }
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
    let main = html! {
        div #agent data-agent=(agent_id) {
            p.muted #agent-loading { "Choose an agent key above to see this agent." }
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
                section aria-labelledby="equity-title" {
                    h2 #equity-title { "Equity" }
                    p.muted { "The agent's hourly equity marks, then its account sampled while this page is open." }
                    div #equity-chart role="img" aria-label="The agent's equity over time" {}
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
    shell(&visitor, &format!("Agent {agent_id}"), main, on_simnet)
}

pub(crate) async fn webhooks(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/webhooks");
    }
    let main = html! {
        section aria-labelledby="deliveries-title" {
            h2 #deliveries-title { "Webhook deliveries" }
            div #deliveries aria-live="polite" { p.muted { "Choose an agent key above to see its account's deliveries." } }
        }
    };
    shell(
        &visitor,
        "Webhooks",
        main,
        web.state.chain.simnet().is_some(),
    )
}
