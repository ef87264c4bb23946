//! The web app: server-rendered pages at `/` and the other non-`/api` paths, for operators and
//! spectators. Every page is a front end of the JSON API: pages read through the API in process
//! ([`internal::Api`]), and the browser's writes go through `/web-api/…`, which checks the
//! cross-site guard ([`csrf`]) and then hands the request to the very same API router. So no page
//! can do what the API refuses, and every refusal reaches the page in the API's own words.
//!
//! The structure is described in docs/web.md.

mod assets;
mod csrf;
pub(crate) mod internal;
mod layout;
mod pages;
mod solana_pay;

use axum::Router;
use axum::routing::{get, post};

pub use assets::{ASSETS, Asset};
pub(crate) use csrf::guard_api_writes;

/// The cross-site token of the session whose cookie value is `session_token`: what a client
/// that writes to the API with its session cookie sends as `X-CSRF-Token` (docs/web.md).
pub fn csrf_token(session_token: &str) -> String {
    csrf::token_for(session_token)
}
use internal::Api;

use crate::state::AppState;

/// What the page handlers reach: the server state and the API router they read through.
#[derive(Clone)]
pub(crate) struct Web {
    pub(crate) state: AppState,
    pub(crate) api: Api,
}

/// The web app's routes in front of `api` (the complete API router, state applied). Anything
/// the web app does not serve falls through to `api`, so every `/api/…` and `/simnet/…` answer,
/// including the JSON 404 for unknown paths, is unchanged.
pub(crate) fn router(state: AppState, api: Router) -> Router {
    let web = Web {
        state,
        api: Api::new(api.clone()),
    };
    Router::new()
        .route("/", get(pages::home::page))
        .route("/tournaments", get(pages::tournaments::list))
        .route("/tournaments/{id}", get(pages::tournaments::detail))
        .route("/tournaments/{id}/pay.svg", get(pages::tournaments::pay_qr))
        .route("/dungeon", get(pages::dungeon::today))
        .route("/dungeon/runs/{run_id}", get(pages::dungeon::run))
        .route("/signup", get(pages::auth::signup))
        .route("/login", get(pages::auth::login))
        .route("/logout", post(pages::auth::logout))
        .route("/account", get(pages::account::page))
        .route("/keys", get(pages::keys::page))
        .route("/agents", get(pages::agents::list))
        .route("/agents/{agent_id}", get(pages::agents::detail))
        .route("/webhooks", get(pages::agents::webhooks))
        .route("/admin", get(pages::admin::accounts))
        .route("/admin/accounts/{id}", get(pages::admin::account))
        .route("/admin/agents", get(pages::admin::agents))
        .route("/admin/components", get(pages::admin::components))
        .route("/admin/tournaments", get(pages::admin::tournaments))
        .route("/admin/payouts", get(pages::admin::payouts))
        .route("/admin/audit", get(pages::admin::audit))
        .route("/assets/{hash}/{name}", get(assets::serve))
        .route("/web-api/{*path}", axum::routing::any(internal::forward))
        .fallback(not_found)
        .with_state(web)
}

/// What the web app does not serve: the API's own paths go to the API unchanged (its JSON 404
/// included); any other path is a page a person asked for, answered with a page.
async fn not_found(
    axum::extract::State(web): axum::extract::State<Web>,
    visitor: internal::Visitor,
    request: axum::extract::Request,
) -> axum::response::Response {
    let path = request.uri().path();
    if path.starts_with("/api/")
        || path == "/api"
        || path.starts_with("/simnet/")
        || path == "/metrics"
    {
        use tower::ServiceExt;
        return match web.api.router().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
    }
    layout::Page {
        title: "Page not found",
        visitor: &visitor,
        scripts: &[],
        styles: &[],
        main: maud::html! {
            p { "There is no page at " code { (path) } "." }
            p { a href="/" { "Home" } " · " a href="/tournaments" { "Tournaments" } " · " a href="/dungeon" { "Today's dungeon" } }
        },
    }
    .render(axum::http::StatusCode::NOT_FOUND)
}
