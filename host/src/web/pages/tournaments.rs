//! Tournaments: the list (the API's filters, sort and paging, passed through unchanged so the
//! API judges them), and a tournament's page: rules, window, fee, pool and split, the leaderboard
//! (kept live by `tournament.js` over the SSE stream), the performance chart, and how to enter.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::Value;

use crate::web::Web;
use crate::web::internal::Visitor;
use crate::web::layout::{
    Page, data_island, failure, human, percent, short, status_region, text, time, tx, url_escape,
    usdc,
};
use crate::web::solana_pay::{Transfer, qr_svg};

/// The list's filters, as the API names them, with the choices the form offers.
const STATUSES: [(&str, &str); 5] = [
    ("", "Any status"),
    ("upcoming", "Upcoming"),
    ("live", "Live"),
    ("ended", "Ended"),
    ("cancelled", "Cancelled"),
];
const ORDER_BY: [(&str, &str); 6] = [
    ("", "Created"),
    ("name", "Name"),
    ("startDate", "Start"),
    ("endDate", "End"),
    ("currentParticipants", "Participants"),
    ("createdAt", "Created (explicit)"),
];

pub(crate) async fn list(
    State(web): State<Web>,
    visitor: Visitor,
    RawQuery(query): RawQuery,
) -> Response {
    let query = query.unwrap_or_default();
    let params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .filter(|(_, value)| !value.is_empty())
        .collect();
    let param = |name: &str| param_of(&params, name).to_owned();
    let api_query: String = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params.iter())
        .finish();
    let answer = web
        .api
        .get(&format!("/api/tournaments?{api_query}"), &visitor)
        .await;
    let page_link = |page: i64| {
        let mut pairs: Vec<(String, String)> = params
            .iter()
            .filter(|(key, _)| key != "page")
            .cloned()
            .collect();
        pairs.push(("page".into(), page.to_string()));
        let query: String = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs.iter())
            .finish();
        format!("/tournaments?{query}")
    };
    let main = html! {
        form.filters method="get" action="/tournaments" aria-label="Filter tournaments" {
            label { "Status " select name="status" {
                @for (value, name) in STATUSES {
                    option value=(value) selected[param("status") == value] { (name) }
                }
            } }
            label { "Type " input name="type" value=(param("type")) placeholder="e.g. highest_pnl" size="12"; }
            label { "Visibility " select name="visibility" {
                option value="" { "Any" }
                option value="public" selected[param("visibility") == "public"] { "Public" }
                option value="private" selected[param("visibility") == "private"] { "Private" }
            } }
            label { "Search " input type="search" name="search" value=(param("search")) size="14"; }
            label { "Sort by " select name="orderBy" {
                @for (value, name) in ORDER_BY {
                    option value=(value) selected[param("orderBy") == value] { (name) }
                }
            } }
            label { "Order " select name="order" {
                option value="" { "Default" }
                option value="asc" selected[param("order") == "asc"] { "Ascending" }
                option value="desc" selected[param("order") == "desc"] { "Descending" }
            } }
            label { "Per page " input type="number" name="pageSize" min="1" max="50" value=(param("pageSize")) size="3"; }
            button type="submit" { "Show" }
        }
        @match &answer {
            Ok(list) => {
                (tournament_table(&list["tournaments"], "No tournament matches these filters."))
                @let page = list["pagination"]["page"].as_i64().unwrap_or(0);
                @let pages = list["pagination"]["totalPages"].as_i64().unwrap_or(0);
                nav.paging aria-label="Pages" {
                    @if page > 0 { a href=(page_link(page - 1)) rel="prev" { "← Previous" } }
                    span { "Page " (page + 1) " of " (pages.max(1)) " · "
                        (text(&list["pagination"]["totalCount"])) " tournaments" }
                    @if page + 1 < pages { a href=(page_link(page + 1)) rel="next" { "Next →" } }
                }
            }
            Err(failed) => p.error role="alert" { (human(failed)) },
        }
    };
    let status = match &answer {
        Err(failed) if failed.status.is_client_error() => failed.status,
        _ => StatusCode::OK,
    };
    Page {
        title: "Tournaments",
        visitor: &visitor,
        scripts: &[],
        styles: &[],
        main,
    }
    .render(status)
}

/// The value of the query parameter `name`, or "".
fn param_of<'a>(params: &'a [(String, String)], name: &str) -> &'a str {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .unwrap_or("")
}

/// A table of tournaments (list rows of the API).
pub(crate) fn tournament_table(rows: &Value, empty: &str) -> Markup {
    let rows = rows.as_array().cloned().unwrap_or_default();
    html! {
        @if rows.is_empty() {
            p.empty { (empty) }
        } @else {
            div.scroll { table {
                thead { tr { th { "Name" } th { "Status" } th { "Window" } th.num { "Fee" }
                    th.num { "Pool" } th.num { "Seats" } } }
                tbody {
                    @for row in &rows {
                        tr {
                            td { a href=(format!("/tournaments/{}", text(&row["id"]))) { (text(&row["name"])) } }
                            td { span class=(format!("badge {}", text(&row["status"]))) { (text(&row["status"])) } }
                            td { (time(&row["startDate"])) " → " (time(&row["endDate"])) }
                            td.num { @if row["entryFee"].as_f64() == Some(0.0) { "free" } @else { (usdc(&row["entryFee"])) } }
                            td.num { (usdc(&row["prizePool"])) }
                            td.num { (text(&row["currentParticipants"])) " / " (text(&row["maxParticipants"])) }
                        }
                    }
                }
            } }
        }
    }
}

/// `?invite=` on a tournament's page: a private tournament's invite code, passed on to every
/// API call the page (and its script) makes.
#[derive(serde::Deserialize)]
pub(crate) struct InviteQuery {
    invite: Option<String>,
}

impl InviteQuery {
    /// `inviteCode=…` for an API query string, or nothing.
    fn api_param(&self) -> String {
        self.invite
            .as_deref()
            .filter(|code| !code.is_empty())
            .map(|code| format!("inviteCode={}", url_escape(code)))
            .unwrap_or_default()
    }
}

pub(crate) async fn detail(
    State(web): State<Web>,
    visitor: Visitor,
    Path(id): Path<String>,
    axum::extract::Query(invite): axum::extract::Query<InviteQuery>,
) -> Response {
    let escaped = url_escape(&id);
    let code = invite.api_param();
    let tournament = match web
        .api
        .get(&format!("/api/tournaments/{escaped}?{code}"), &visitor)
        .await
    {
        Ok(tournament) => tournament,
        Err(failed) => return failure(&visitor, "Tournament", &failed),
    };
    let board = web
        .api
        .get(
            &format!("/api/tournaments/{escaped}/leaderboard?pageSize=100&{code}"),
            &visitor,
        )
        .await;
    let performance = web
        .api
        .get(
            &format!("/api/tournaments/{escaped}/performance?{code}"),
            &visitor,
        )
        .await
        .unwrap_or(Value::Null);
    let trades = web
        .api
        .get(
            &format!("/api/tournaments/{escaped}/trades?limit=10&{code}"),
            &visitor,
        )
        .await;
    let status = text(&tournament["status"]);
    let open = status == "upcoming" || status == "live";
    let paid = tournament["entryFee"].as_f64().unwrap_or(0.0) > 0.0;
    let split = tournament["payoutSplit"]
        .as_array()
        .map(|shares| {
            shares
                .iter()
                .enumerate()
                .map(|(place, share)| format!("#{}: {share} %", place + 1))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let board_note = match &board {
        Ok(board) if board["stale"] == true => "The newest valuation is more than 2 hours old.",
        Ok(_) if open => "Updates live.",
        _ => "",
    };
    let main = html! {
        p { span class=(format!("badge {status}")) { (status) } " " (text(&tournament["description"])) }
        section aria-labelledby="rules" {
            h2 #rules { "Rules" }
            dl.facts {
                dt { "Type" } dd { (text(&tournament["type"])) @if tournament["isPaperTrading"] == true { " (paper trading)" } }
                dt { "Window" } dd { (time(&tournament["startDate"])) " → " (time(&tournament["endDate"])) }
                @if !tournament["registrationDeadline"].is_null() {
                    dt { "Registration until" } dd { (time(&tournament["registrationDeadline"])) }
                }
                dt { "Entry fee" } dd { @if paid { (usdc(&tournament["entryFee"])) " per wallet" } @else { "free" } }
                dt { "Prize pool" } dd { (usdc(&tournament["prizePool"])) " (rake " (text(&tournament["rakePercent"])) " %)" }
                dt { "Payout split" } dd { (split) }
                dt { "Seats" } dd #seats { (text(&tournament["currentParticipants"])) " / " (text(&tournament["maxParticipants"])) }
                dt { "Visibility" } dd { (text(&tournament["visibility"])) }
            }
        }
        section aria-labelledby="board-title" {
            h2 #board-title { @if status == "ended" { "Final standings" } @else { "Leaderboard" } }
            p.muted #board-state role="status" aria-live="polite" { (board_note) }
            @match &board {
                Ok(board) => (leaderboard_table(&board["entries"], status == "ended", web.state.chain.simnet().is_some())),
                Err(failed) => p.error { (human(failed)) },
            }
        }
        @if status != "upcoming" {
            section aria-labelledby="trades-title" {
                h2 #trades-title { "Latest trades" }
                p.muted { "What the agents in this tournament just did, with their strategies' reasons." }
                @match &trades {
                    Ok(feed) => (live_trades_table(feed, web.state.chain.simnet().is_some())),
                    Err(failed) => p.error { (human(failed)) },
                }
            }
        }
        section aria-labelledby="chart-title" {
            h2 #chart-title { "Performance" }
            label { "Wallet " select #chart-wallet { option value="" { "Top 10" } } }
            div #chart role="img" aria-label="Portfolio value of each charted wallet over time" {}
            (data_island("performance-data", &performance))
        }
        @if open {
            section aria-labelledby="enter" {
                h2 #enter { "How to enter" }
                @if paid {
                    p { "Pay " strong { (usdc(&tournament["entryFee"])) } " per wallet in USDC to the escrow wallet "
                        code.wrap { (text(&tournament["escrowWalletAddress"])) }
                        " in one transaction with the registration memo, then send its signature below." }
                    form #memo-form data-tournament=(id) {
                        label for="memo-wallets" { "Wallets to register (1 to 10, comma-separated)" }
                        input #memo-wallets name="wallets" required autocomplete="off";
                        button type="submit" { "Show the payment" }
                    }
                    div #payment hidden {
                        dl.facts {
                            dt { "Amount" } dd #pay-amount {}
                            dt { "Recipient" } dd { code.wrap #pay-recipient {} }
                            dt { "Memo" } dd { code.wrap #pay-memo {} }
                            dt { "Solana Pay" } dd { a #pay-url href="#" { "Open in a wallet app" } }
                        }
                        img #pay-qr alt="QR code of the Solana Pay transfer request" width="240" height="240";
                    }
                } @else {
                    p { "This tournament is free: register a wallet with no transaction." }
                }
                form #register-form data-tournament=(id) data-paid=(if paid { "true" } else { "false" }) {
                    div.field { label for="reg-wallets" { "Wallets (comma-separated)" }
                        input #reg-wallets name="wallets" required autocomplete="off"; }
                    @if paid {
                        div.field { label for="reg-payer" { "Payer wallet" }
                            input #reg-payer name="payerWallet" required autocomplete="off"; }
                        div.field { label for="reg-signature" { "Transaction signature" }
                            input #reg-signature name="txSignature" required autocomplete="off"; }
                    }
                    button type="submit" { "Register" }
                    (status_region("register-status"))
                }
            }
        }
        (data_island("tournament-data", &serde_json::json!({
            "id": id, "status": status, "mint": web.state.chain.stablecoin_mint(),
            "invite": invite.invite.as_deref().unwrap_or_default(),
            "simnet": web.state.chain.simnet().is_some()
        })))
    };
    Page {
        title: &text(&tournament["name"]),
        visitor: &visitor,
        scripts: &["uPlot.iife.min.js", "tournament.js"],
        styles: &["uPlot.min.css"],
        main,
    }
    .render(StatusCode::OK)
}

/// The newest trades of the tournament's live agents (`GET /api/tournaments/{id}/trades`); the
/// same columns `tournament.js` renders as it polls for new ones.
pub(crate) fn live_trades_table(feed: &Value, on_simnet: bool) -> Markup {
    let rows = feed["trades"].as_array().cloned().unwrap_or_default();
    html! {
        div.scroll { table #live-trades {
            thead { tr { th { "When" } th { "Agent" } th { "Side" } th.num { "Amount" } th.num { "Price" }
                th.num { "Value" } th { "Reason" } th { "Transaction" } } }
            tbody {
                @if rows.is_empty() { tr { td colspan="8" { "No agent has traded here yet." } } }
                @for row in &rows {
                    tr {
                        td { (time(&row["executedAt"])) }
                        td { (text(&row["agentName"])) " " span.muted { "(" (text(&row["agentClass"])) ")" } }
                        td { span class=(format!("badge {}", text(&row["side"]))) { (text(&row["side"])) } }
                        td.num { (format!("{:.4}", row["baseAmount"].as_f64().unwrap_or_default())) " " (text(&row["baseToken"])) }
                        td.num { (format!("{:.2}", row["price"].as_f64().unwrap_or_default())) }
                        td.num { (usdc(&row["notional"])) }
                        td { (text(&row["reason"])) }
                        td { (tx(&row["txSignature"], on_simnet)) }
                    }
                }
            }
        } }
    }
}

/// Leaderboard rows; the same columns `tournament.js` renders on each live update.
pub(crate) fn leaderboard_table(rows: &Value, ended: bool, on_simnet: bool) -> Markup {
    let rows = rows.as_array().cloned().unwrap_or_default();
    html! {
        div.scroll { table #board data-ended=(if ended { "true" } else { "false" }) {
            thead { tr { th.num { "#" } th { "Wallet" } th.num { "Value" } th.num { "PnL" } th.num { "PnL %" }
                @if ended { th.num { "Prize" } } } }
            tbody {
                @if rows.is_empty() { tr { td colspan="6" { "No wallet registered yet." } } }
                @for row in &rows {
                    tr {
                        td.num { (text(row.get("finalRank").unwrap_or(&row["rank"]))) }
                        td { (short(&row["wallet"])) @if let Some(name) = row["displayName"].as_str() { " " (name) } }
                        td.num { (usdc(&row["currentValue"])) }
                        td.num { (usdc(&row["pnl"])) }
                        td.num { (percent(&row["pnlPercent"])) }
                        @if ended { td.num { (usdc(&row["prizeAwarded"]))
                            @if row["prizeTxSignature"].is_string() { br; (tx(&row["prizeTxSignature"], on_simnet)) } } }
                    }
                }
            }
        } }
    }
}

#[derive(serde::Deserialize)]
pub(crate) struct QrParams {
    wallets: String,
    invite: Option<String>,
}

/// The QR code of the Solana Pay transfer request for registering `wallets`, drawn from the
/// API's registration memo (so amount, recipient and memo are exactly the API's).
pub(crate) async fn pay_qr(
    State(web): State<Web>,
    visitor: Visitor,
    Path(id): Path<String>,
    axum::extract::Query(params): axum::extract::Query<QrParams>,
) -> Response {
    let code = InviteQuery {
        invite: params.invite.clone(),
    }
    .api_param();
    let path = format!(
        "/api/tournaments/{}/registration-memo?wallets={}&{code}",
        url_escape(&id),
        url_escape(&params.wallets)
    );
    let memo = match web.api.get(&path, &visitor).await {
        Ok(memo) => memo,
        Err(failed) => return (failed.status, failed.message).into_response(),
    };
    let transfer = Transfer {
        recipient: memo["escrowWalletAddress"].as_str().unwrap_or_default(),
        amount_ui: memo["amountUi"].as_f64().unwrap_or_default(),
        spl_token: web.state.chain.stablecoin_mint(),
        memo: memo["memo"].as_str().unwrap_or_default(),
        label: &format!("Crucible tournament {id}"),
    };
    match qr_svg(&transfer.url()) {
        Some(svg) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("image/svg+xml"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            svg,
        )
            .into_response(),
        None => (StatusCode::BAD_REQUEST, "too long for a QR code").into_response(),
    }
}
