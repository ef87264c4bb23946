//! Sign-up, sign-in and sign-out. The forms post to the API's auth routes through `/web-api`
//! (`app.js`); wallet sign-in (`wallet.js`) uses a browser wallet's `signMessage` when the page
//! finds one, and otherwise shows the nonce message to sign elsewhere and paste back.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use crate::auth::session;
use crate::web::internal::{Visitor, refusal};
use crate::web::layout::{Page, status_region, wallet_signature_steps};
use crate::web::{Web, csrf};

#[derive(serde::Deserialize)]
pub(crate) struct Next {
    next: Option<String>,
}

/// Where to go after signing in: a local path only (never another site).
fn next_path(next: Option<String>) -> String {
    next.filter(|path| path.starts_with('/') && !path.starts_with("//"))
        .unwrap_or_else(|| "/account".to_owned())
}

/// A sign-up or sign-in page: the e-mail form above, wallet sign-in (`wallet.js`) below.
fn auth_page(title: &str, visitor: &Visitor, main: Markup) -> Response {
    Page {
        title,
        visitor,
        scripts: &["wallet.js"],
        styles: &[],
        main,
    }
    .render(StatusCode::OK)
}

fn acceptance() -> Markup {
    html! {
        div.field.check { input #accept-terms type="checkbox" name="acceptTerms" data-type="bool" required;
            label for="accept-terms" { "I accept the terms of service" } }
        div.field.check { input #accept-privacy type="checkbox" name="acceptPrivacy" data-type="bool" required;
            label for="accept-privacy" { "I accept the privacy policy" } }
    }
}

fn wallet_section(next: &str, with_acceptance: bool) -> Markup {
    html! {
        section #wallet-sign-in aria-labelledby="wallet-title" data-next=(next) {
            h2 #wallet-title { "With a wallet" }
            p #wallet-found.muted { "Looking for a browser wallet…" }
            @if with_acceptance {
                p.muted { "A first wallet sign-in creates the account: tick both boxes above first." }
            }
            div.field { label for="wallet-address" { "Wallet address" }
                input #wallet-address name="wallet" autocomplete="off" placeholder="filled in by your wallet, or paste it"; }
            (wallet_signature_steps("Sign in"))
        }
    }
}

pub(crate) async fn signup(visitor: Visitor, Query(next): Query<Next>) -> Response {
    let next = next_path(next.next);
    let main = html! {
        form.card data-api="POST /web-api/auth/signup" data-next=(next) {
            h2 { "With e-mail" }
            div.field { label for="email" { "E-mail" } input #email type="email" name="email" required autocomplete="email"; }
            div.field { label for="password" { "Password" }
                input #password type="password" name="password" required minlength="10" autocomplete="new-password" aria-describedby="password-rule";
                small #password-rule { "10 to 128 characters, with a letter and a digit." } }
            div.field { label for="display-name" { "Display name (optional)" } input #display-name name="displayName" data-type="optional" maxlength="40"; }
            (acceptance())
            p.muted { "Signing up creates an embedded wallet for your account." }
            button type="submit" { "Sign up" }
            (status_region("signup-status"))
        }
        (wallet_section(&next, true))
        p { "Already have an account? " a href="/login" { "Sign in" } }
    };
    auth_page("Sign up", &visitor, main)
}

pub(crate) async fn login(visitor: Visitor, Query(next): Query<Next>) -> Response {
    let next = next_path(next.next);
    let main = html! {
        form.card data-api="POST /web-api/auth/login" data-next=(next) {
            h2 { "With e-mail" }
            div.field { label for="email" { "E-mail" } input #email type="email" name="email" required autocomplete="email"; }
            div.field { label for="password" { "Password" } input #password type="password" name="password" required autocomplete="current-password"; }
            button type="submit" { "Sign in" }
            (status_region("login-status"))
        }
        div #wallet-acceptance hidden { (acceptance()) }
        (wallet_section(&next, false))
        p { "New here? " a href="/signup" { "Sign up" } }
    };
    auth_page("Sign in", &visitor, main)
}

/// Sign out: a plain form post, checked like every cookie-authenticated write.
pub(crate) async fn logout(State(web): State<Web>, headers: HeaderMap, body: Bytes) -> Response {
    let form_token = url::form_urlencoded::parse(&body)
        .find(|(name, _)| name == csrf::FIELD)
        .map(|(_, value)| value.into_owned());
    if let Err(refused) = csrf::check(&headers, form_token.as_deref()) {
        return refusal(refused);
    }
    if let Some(token) = session::token_from_headers(&headers)
        && let Err(error) = session::delete(&web.state.store, &token).await
    {
        tracing::error!(%error, "could not delete a session at sign-out");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "could not sign out right now; try again",
        )
            .into_response();
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    let response_headers = response.headers_mut();
    response_headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    if let Ok(cookie) = HeaderValue::from_str(&session::clear_cookie(&web.state.config)) {
        response_headers.insert(header::SET_COOKIE, cookie);
    }
    response
}
