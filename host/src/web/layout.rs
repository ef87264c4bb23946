//! The page shell (head, navigation, skip link, footer) and the small formatting helpers every
//! page shares. Pages are maud templates: checked at compile time and escaped by default.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use super::assets;
use super::internal::{Failed, Visitor};

/// A rendered page: its title, the scripts it needs beyond `app.js`, and its main content.
pub(super) struct Page<'a> {
    pub title: &'a str,
    pub visitor: &'a Visitor,
    pub scripts: &'a [&'static str],
    pub styles: &'a [&'static str],
    pub main: Markup,
}

impl Page<'_> {
    pub(super) fn render(self, status: StatusCode) -> Response {
        let markup = html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    @if let Some(token) = &self.visitor.csrf_token {
                        meta name="csrf-token" content=(token);
                    }
                    title { (self.title) " · Crucible" }
                    link rel="stylesheet" href=(assets::url("app.css"));
                    @for style in self.styles {
                        link rel="stylesheet" href=(assets::url(style));
                    }
                    script src=(assets::url("app.js")) defer {}
                    @for script in self.scripts {
                        script src=(assets::url(script)) defer {}
                    }
                }
                body {
                    a.skip href="#main" { "Skip to content" }
                    header.top {
                        nav aria-label="Main" {
                            a.brand href="/" { "Crucible" }
                            a href="/tournaments" { "Tournaments" }
                            a href="/dungeon" { "Dungeon" }
                            @if self.visitor.signed_in() {
                                a href="/agents" { "Agents" }
                                a href="/keys" { "API keys" }
                                a href="/webhooks" { "Webhooks" }
                                a href="/account" { "Account" }
                                @if self.visitor.is_admin {
                                    a href="/admin" { "Admin" }
                                }
                                form.inline method="post" action="/logout" {
                                    @if let Some(token) = &self.visitor.csrf_token {
                                        input type="hidden" name="csrf" value=(token);
                                    }
                                    button.link type="submit" { "Sign out" }
                                }
                            } @else {
                                a href="/login" { "Sign in" }
                                a.button href="/signup" { "Sign up" }
                            }
                        }
                    }
                    main #main tabindex="-1" {
                        h1 { (self.title) }
                        (self.main)
                    }
                    footer {
                        p { "Crucible — AI agents compete with Solana wallets. "
                            a href="/api/openapi.json" { "API description" } }
                    }
                }
            }
        };
        let mut response = (status, axum::response::Html(markup.into_string())).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        // Scripts and styles come from this server only; nothing inline runs.
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
                 frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
            ),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        response
    }
}

/// A page that could not be shown because the API refused or failed.
pub(super) fn failure(visitor: &Visitor, title: &str, failed: &Failed) -> Response {
    let status = if failed.status.is_client_error() || failed.status.is_server_error() {
        failed.status
    } else {
        StatusCode::BAD_GATEWAY
    };
    Page {
        title,
        visitor,
        scripts: &[],
        styles: &[],
        main: html! { p.error role="alert" { (human(failed)) } },
    }
    .render(status)
}

/// What to tell a person about a failed API call.
pub(super) fn human(failed: &Failed) -> String {
    match failed.status {
        StatusCode::UNAUTHORIZED => "Please sign in to see this page.".to_owned(),
        StatusCode::TOO_MANY_REQUESTS => {
            format!("Too many requests right now: {}", failed.message)
        }
        StatusCode::NOT_FOUND => format!("Not found: {}", failed.message),
        status if status.is_server_error() => format!(
            "The server could not answer ({}): {}. Try again in a moment.",
            status.as_u16(),
            failed.message
        ),
        _ => failed.message.clone(),
    }
}

/// Redirect to the sign-in page, coming back to `to` afterwards.
pub(super) fn sign_in_first(to: &str) -> Response {
    let location = format!("/login?next={}", url_escape(to));
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

pub(super) fn url_escape(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The string at `value`, or an em dash.
pub(super) fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => "—".to_owned(),
        other => other.to_string(),
    }
}

/// A USDC amount for people: two decimals, up to six when smaller than a cent.
pub(super) fn usdc(value: &Value) -> String {
    match value.as_f64() {
        Some(amount) if amount != 0.0 && amount.abs() < 0.01 => format!("{amount:.6} USDC"),
        Some(amount) => format!("{amount:.2} USDC"),
        None => "—".to_owned(),
    }
}

/// A percentage with a sign.
pub(super) fn percent(value: &Value) -> String {
    value
        .as_f64()
        .map(|number| format!("{number:+.2} %"))
        .unwrap_or_else(|| "—".to_owned())
}

/// An RFC 3339 time as `2026-11-24 12:15 UTC`; a `<time>` a script may localise.
pub(super) fn time(value: &Value) -> Markup {
    match value.as_str() {
        Some(at) => {
            let shown = at.get(..16).unwrap_or(at).replace('T', " ");
            html! { time datetime=(at) { (shown) " UTC" } }
        }
        None => html! { "—" },
    }
}

/// A wallet or signature shortened for tables, whole in its title and for copying.
pub(super) fn short(value: &Value) -> Markup {
    match value.as_str() {
        Some(full) if full.len() > 12 => {
            let head = full.get(..4).unwrap_or(full);
            let tail = full.get(full.len() - 4..).unwrap_or("");
            html! { code title=(full) { (head) "…" (tail) } }
        }
        Some(full) => html! { code { (full) } },
        None => html! { "—" },
    }
}

/// A transaction signature, linked to a public explorer on real clusters (the embedded simnet
/// has no explorer, so there it is shown, not linked).
pub(super) fn tx(value: &Value, on_simnet: bool) -> Markup {
    match value.as_str() {
        Some(signature) if !on_simnet => html! {
            a href=(format!("https://explorer.solana.com/tx/{signature}")) rel="noopener" { (short(value)) }
        },
        Some(_) => short(value),
        None => html! { "—" },
    }
}

/// The steps of proving a wallet by signature, shared by wallet sign-in and wallet linking
/// (`wallet.js` drives them): fetch the nonce message, sign it with the browser wallet or paste a
/// signature made elsewhere, then send it with the `submit` button.
pub(super) fn wallet_signature_steps(submit: &str) -> Markup {
    html! {
        button #wallet-nonce type="button" { "Get the message to sign" }
        div #wallet-message-box hidden {
            p { "Sign exactly this message with the wallet:" }
            pre #wallet-message {}
            button #wallet-sign type="button" { "Sign with the browser wallet" }
            div.field { label for="wallet-signature" { "Or paste the base58 signature" }
                input #wallet-signature autocomplete="off"; }
            button #wallet-submit type="button" { (submit) }
        }
        (status_region("wallet-status"))
    }
}

/// A visible message region a script fills with the API's answer.
pub(super) fn status_region(id: &str) -> Markup {
    html! { p.status id=(id) role="status" aria-live="polite" {} }
}

/// A JSON value embedded for a page script (as text in a non-executed `<script>` element; `<`
/// is escaped so the value cannot end the element).
pub(super) fn data_island(id: &str, value: &Value) -> Markup {
    let json = value.to_string().replace('<', "\\u003c");
    html! { script type="application/json" id=(id) { (PreEscaped(json)) } }
}
