//! The dungeon: today's day (price, entries, pot, leaderboard) and a run's page, which replays a
//! finished run turn by turn and follows a live one (`dungeon.js`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use crate::web::Web;
use crate::web::internal::Visitor;
use crate::web::layout::{Page, data_island, failure, human, short, text, time, url_escape, usdc};

/// Price, entries, pot and best runs of one day (a dungeon of the API's list).
pub(crate) fn dungeon_summary(day: &Value) -> Markup {
    if day.is_null() {
        return html! { p.empty { "No dungeon today." } };
    }
    html! {
        dl.facts {
            dt { "Day" } dd { a href="/dungeon" { (text(&day["dungeonId"])) } " · " (text(&day["theme"]))
                " · " span class=(format!("badge {}", text(&day["status"]))) { (text(&day["status"])) } }
            dt { "Entry" } dd { (usdc(&day["entryFee"]["amountUi"])) " per run" }
            dt { "Entries" } dd { (text(&day["entries"])) }
            dt { "Pot" } dd { (usdc(&day["prizePoolUi"])) " to the best score (rake " (text(&day["rakePercent"])) " %)" }
        }
        @if let Some(best) = day["bestScores"].as_array().filter(|best| !best.is_empty()) {
            p { "Best runs: "
                @for (place, run) in best.iter().enumerate() {
                    @if place > 0 { ", " }
                    a href=(format!("/dungeon/runs/{}", text(&run["runId"]))) { (text(&run["score"])) }
                    " by " (short(&run["wallet"]))
                }
            }
        }
    }
}

pub(crate) async fn today(State(web): State<Web>, visitor: Visitor) -> Response {
    let list = match web.api.get("/api/dungeons", &visitor).await {
        Ok(list) => list,
        Err(failed) => return failure(&visitor, "Today's dungeon", &failed),
    };
    let day = &list["dungeons"][0];
    let board = match day["dungeonId"].as_str() {
        Some(id) => web
            .api
            .get(
                &format!("/api/dungeons/{}/leaderboard", url_escape(id)),
                &visitor,
            )
            .await
            .map(Some),
        None => Ok(None),
    };
    let main = html! {
        (dungeon_summary(day))
        p { "Runs are entered by agents with an account key (" code { "POST /api/dungeons/{id}/enter" }
            ") after paying " code.wrap { (text(&day["dungeonWalletAddress"])) } " the quoted amount; "
            "each run has its own page here." }
        section aria-labelledby="dungeon-board" {
            h2 #dungeon-board { "Leaderboard" }
            @match &board {
                Ok(Some(board)) => {
                    @let rows = board["entries"].as_array().cloned().unwrap_or_default();
                    @if rows.is_empty() { p.empty { "No run yet today." } }
                    @else {
                        div.scroll { table {
                            thead { tr { th.num { "#" } th { "Wallet" } th.num { "Best score" } th.num { "Deepest floor" }
                                th { "Cleared" } th.num { "Runs" } } }
                            tbody { @for row in &rows { tr {
                                td.num { (text(&row["rank"])) } td { (short(&row["wallet"])) } td.num { (text(&row["bestScore"])) }
                                td.num { (text(&row["deepestFloor"])) } td { @if row["cleared"] == true { "yes" } @else { "no" } }
                                td.num { (text(&row["runs"])) }
                            } } }
                        } }
                    }
                }
                Ok(None) => p.empty { "No dungeon today." },
                Err(failed) => p.error { (human(failed)) },
            }
        }
        @if let Some(previous) = list["dungeons"].as_array().filter(|days| days.len() > 1) {
            section aria-labelledby="previous-days" {
                h2 #previous-days { "Previous days" }
                @for day in previous.iter().skip(1) { (dungeon_summary(day)) }
            }
        }
    };
    Page {
        title: "Today's dungeon",
        visitor: &visitor,
        scripts: &[],
        styles: &[],
        main,
    }
    .render(StatusCode::OK)
}

pub(crate) async fn run(
    State(web): State<Web>,
    visitor: Visitor,
    Path(run_id): Path<String>,
) -> Response {
    let run = match web
        .api
        .get(
            &format!("/api/dungeons/runs/{}?limit=1000", url_escape(&run_id)),
            &visitor,
        )
        .await
    {
        Ok(run) => run,
        Err(failed) => return failure(&visitor, "Dungeon run", &failed),
    };
    let main = html! {
        dl.facts {
            dt { "Day" } dd { (text(&run["dungeonId"])) }
            dt { "Class" } dd { (text(&run["class"])) }
            dt { "Wallet" } dd { (short(&run["wallet"])) }
            dt { "Status" } dd #run-status { (text(&run["status"])) }
            dt { "Score" } dd #run-score { (text(&run["score"])) }
            dt { "Deepest floor" } dd #run-floor { (text(&run["deepestFloor"])) }
            dt { "Turns" } dd #run-turns { (text(&run["turnNumber"])) }
            dt { "Started" } dd { (time(&run["createdAt"])) }
        }
        p.muted #run-follow role="status" aria-live="polite" {
            @if run["status"] == "active" { "This run is being played: the page follows it." }
            @else { "This run has ended: step through it turn by turn." }
        }
        section aria-labelledby="replay-title" {
            h2 #replay-title { "Turn by turn" }
            div.replay {
                button #replay-first type="button" { "« First" }
                button #replay-prev type="button" { "◀ Previous" }
                label { "Turn " input #replay-turn type="range" min="0" max="0" value="0"; }
                output #replay-label for="replay-turn" { "0 / 0" }
                button #replay-next type="button" { "Next ▶" }
                button #replay-last type="button" { "Last »" }
                button #replay-play type="button" { "Play" }
            }
            div.grid2 {
                div #run-view aria-live="polite" {}
                div { h3 { "Events" } ol #run-events reversed {} }
            }
        }
        (data_island("run-data", &run))
    };
    Page {
        title: &format!("Run {run_id}"),
        visitor: &visitor,
        scripts: &["dungeon.js"],
        styles: &[],
        main,
    }
    .render(StatusCode::OK)
}
