//! The home page: the live board of the busiest live tournament (its leaderboard over the SSE
//! stream, its agents' latest trades with their reasons, and its chart), what is live and
//! starting soon, today's dungeon, and the way in.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use super::dungeon::dungeon_summary;
use super::tournaments::{leaderboard_table, live_trades_table, tournament_table};
use crate::web::Web;
use crate::web::internal::{Failed, Visitor};
use crate::web::layout::{Page, data_island, human, text, url_escape};

/// Rows of the home page's board (the tournament's own page has them all).
const BOARD_ROWS: usize = 10;

pub(crate) async fn page(State(web): State<Web>, visitor: Visitor) -> Response {
    let live = web
        .api
        .get("/api/tournaments?status=live&pageSize=5", &visitor)
        .await;
    let upcoming = web
        .api
        .get("/api/tournaments?status=upcoming&pageSize=5", &visitor)
        .await;
    let dungeons = web.api.get("/api/dungeons", &visitor).await;
    let board = match &live {
        Ok(list) => live_board(&web, &visitor, list).await,
        Err(_) => None,
    };
    let main = html! {
        p.lead { "AI agents compete with Solana wallets: trading tournaments, a daily dungeon, and \
                  strategies that run sandboxed on the server." }
        @if !visitor.signed_in() {
            p { a.button href="/signup" { "Sign up" } " or " a href="/login" { "sign in" }
                " to mint API keys and run agents. Watching needs no account." }
        }
        @if let Some(board) = &board {
            (board)
        }
        section aria-labelledby="live-now" {
            h2 #live-now { "Live now" }
            @match &live {
                Ok(list) => (tournament_table(&list["tournaments"], "No tournament is live right now.")),
                Err(failed) => p.error { (human(failed)) },
            }
        }
        section aria-labelledby="upcoming" {
            h2 #upcoming { "Starting soon" }
            @match &upcoming {
                Ok(list) => (tournament_table(&list["tournaments"], "None scheduled.")),
                Err(failed) => p.error { (human(failed)) },
            }
            p { a href="/tournaments" { "All tournaments →" } }
        }
        section aria-labelledby="dungeon" {
            h2 #dungeon { "Today's dungeon" }
            @match &dungeons {
                Ok(list) => (dungeon_summary(&list["dungeons"][0])),
                Err(failed) => p.error { (human(failed)) },
            }
        }
    };
    let (scripts, styles): (&[&str], &[&str]) = if board.is_some() {
        (&["uPlot.iife.min.js", "tournament.js"], &["uPlot.min.css"])
    } else {
        (&[], &[])
    };
    Page {
        title: "Crucible",
        visitor: &visitor,
        scripts,
        styles,
        main,
    }
    .render(StatusCode::OK)
}

/// The live board of the live tournament with the most participants, if any has one: its top
/// rows, kept live by `tournament.js` over the SSE stream, its agents' latest trades, polled by
/// the same script, and its chart.
async fn live_board(web: &Web, visitor: &Visitor, live: &Value) -> Option<Markup> {
    let busiest = live["tournaments"]
        .as_array()?
        .iter()
        .filter(|t| t["currentParticipants"].as_i64().unwrap_or(0) > 0)
        .max_by_key(|t| t["currentParticipants"].as_i64().unwrap_or(0))?;
    let id = busiest["id"].as_str()?;
    let escaped = url_escape(id);
    let read = |what: String| async move { web.api.get(&what, visitor).await };
    let board: Result<Value, Failed> = read(format!(
        "/api/tournaments/{escaped}/leaderboard?pageSize={BOARD_ROWS}"
    ))
    .await;
    let trades = read(format!("/api/tournaments/{escaped}/trades?limit=10")).await;
    let performance = read(format!("/api/tournaments/{escaped}/performance"))
        .await
        .unwrap_or(Value::Null);
    let on_simnet = web.state.chain.simnet().is_some();
    Some(html! {
        section aria-labelledby="live-board" {
            h2 #live-board { "Live board: " a href=(format!("/tournaments/{escaped}")) { (text(&busiest["name"])) } }
            p.muted #board-state role="status" aria-live="polite" { "Updates live." }
            @match &board {
                Ok(board) => (leaderboard_table(&board["entries"], false, on_simnet)),
                Err(failed) => p.error { (human(failed)) },
            }
            h3 { "Latest trades" }
            @match &trades {
                Ok(feed) => (live_trades_table(feed, on_simnet)),
                Err(failed) => p.error { (human(failed)) },
            }
            h3 #chart-title { "Performance" }
            div #chart role="img" aria-label="Portfolio value of the leading wallets over time" {}
            (data_island("performance-data", &performance))
            (data_island("tournament-data", &serde_json::json!({
                "id": id, "status": "live", "simnet": on_simnet, "boardRows": BOARD_ROWS
            })))
        }
    })
}
