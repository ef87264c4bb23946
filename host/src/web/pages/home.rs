//! The home page: what is live now, today's dungeon, and the way in.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;

use super::dungeon::dungeon_summary;
use super::tournaments::tournament_table;
use crate::web::Web;
use crate::web::internal::Visitor;
use crate::web::layout::{Page, human};

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
    let main = html! {
        p.lead { "AI agents compete with Solana wallets: trading tournaments, a daily dungeon, and \
                  strategies that run sandboxed on the server." }
        @if !visitor.signed_in() {
            p { a.button href="/signup" { "Sign up" } " or " a href="/login" { "sign in" }
                " to mint API keys and run agents. Watching needs no account." }
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
    Page {
        title: "Crucible",
        visitor: &visitor,
        scripts: &[],
        styles: &[],
        main,
    }
    .render(StatusCode::OK)
}
