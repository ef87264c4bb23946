//! API keys, account and v1: create (scopes or permissions, expiry, webhook URL), the secret and
//! webhook secret shown once with a copy button, the list (prefix, last use, expiry) and revoke
//! with a confirmation. An account key's spend limits (paying from the embedded wallet) are set at
//! creation and listed with today's spend. All through the API's session-only key routes.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use crate::web::Web;
use crate::web::internal::{Failed, Visitor};
use crate::web::layout::{Page, human, sign_in_first, status_region, text, time};

/// An account key's spend limits and today's spend (`docs/api.md`, "Paying from the embedded
/// wallet"), or that it cannot pay.
fn spend_cell(spend: &Value) -> Markup {
    let usdc = |value: &Value| {
        value
            .as_f64()
            .map(|amount| amount.to_string())
            .unwrap_or_default()
    };
    if spend.is_null() {
        return html! { "cannot pay" };
    }
    html! {
        (usdc(&spend["spentTodayUsdc"])) " of " (usdc(&spend["maxUsdcPerDay"])) " USDC today"
        br; small.muted { "at most " (usdc(&spend["maxUsdcPerEntry"])) " USDC per entry" }
    }
}

fn key_rows(keys: &Result<Vec<Value>, Failed>, family: &str, grants: &str) -> Markup {
    let spends = family == "account";
    let revoke_base = if family == "v1" {
        "/web-api/v1/api-keys/"
    } else {
        "/web-api/api-keys/"
    };
    match keys {
        Err(failed) => html! { p.error { (human(failed)) } },
        Ok(keys) if keys.is_empty() => html! { p.empty { "No key yet." } },
        Ok(keys) => html! {
            div.scroll { table.keys data-family=(family) {
                thead { tr { th { "Name" } th { "Prefix" } th { "Grants" } th { "Status" } th { "Last used" }
                    th { "Expires" } th { "Webhook" } @if spends { th { "Embedded wallet spend" } }
                    th { span.visually-hidden { "Actions" } } } }
                tbody { @for key in keys { tr {
                    td { (text(&key["name"])) }
                    td { code.prefix { (text(&key["keyPrefix"])) "…" } }
                    td { (key[grants].as_array().map(|grants| grants.iter().map(text).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                    td { span class=(format!("badge {}", text(&key["status"]))) { (text(&key["status"])) } }
                    td { @if key["lastUsedAt"].is_null() { "never" } @else { (time(&key["lastUsedAt"])) } }
                    td { @if key["expiresAt"].is_null() { "never" } @else { (time(&key["expiresAt"])) } }
                    td { (text(&key["webhookUrl"])) }
                    @if spends { td { (spend_cell(&key["spend"])) } }
                    td { @if key["status"] == "active" {
                        button.danger type="button" data-revoke=(format!("{revoke_base}{}", text(&key["keyId"])))
                            data-name=(text(&key["name"])) { "Revoke" }
                    } }
                } } }
            } }
        },
    }
}

fn create_form(family: &str) -> Markup {
    let (action, grants_name, grants): (&str, &str, &[&str]) = if family == "v1" {
        (
            "POST /web-api/v1/api-keys",
            "permissions",
            &["agents:read", "agents:write", "agents:start", "agents:stop"],
        )
    } else {
        ("POST /web-api/api-keys", "scopes", &["read", "write"])
    };
    html! {
        form.card data-api=(action) data-show="secret" data-family=(family) {
            div.field { label for=(format!("{family}-name")) { "Name" }
                input id=(format!("{family}-name")) name="name" required maxlength="64" autocomplete="off"; }
            fieldset data-field=(grants_name) {
                legend { @if family == "v1" { "Permissions" } @else { "Scopes" } }
                @for grant in grants {
                    label.check { input type="checkbox" name=(grants_name) value=(grant) data-type="list" checked; " " (grant) }
                }
            }
            div.field { label for=(format!("{family}-expiry")) { "Expires after (days, 1 to 365; empty: never)" }
                input id=(format!("{family}-expiry")) name="expiresInDays" type="number" min="1" max="365" data-type="number"; }
            div.field { label for=(format!("{family}-webhook")) { "Webhook URL (optional)" }
                input id=(format!("{family}-webhook")) name="webhookUrl" type="url" data-type="optional" placeholder="https://…"; }
            @if family == "account" {
                fieldset data-field="spend" aria-describedby="account-spend-help" {
                    legend { "Paying from the embedded wallet (optional)" }
                    p #account-spend-help.muted { "Leave both empty and the key can never move funds. Set both to let it pay entries with "
                        code { "payFrom: \"embedded\"" } ", in USDC, up to 6 decimals." }
                    div.field { label for="account-spend-day" { "Most per day (UTC)" }
                        input #account-spend-day name="spend.maxUsdcPerDay" type="number" min="0.000001" max="1000000" step="0.000001" data-type="number"; }
                    div.field { label for="account-spend-entry" { "Most per entry" }
                        input #account-spend-entry name="spend.maxUsdcPerEntry" type="number" min="0.000001" max="1000000" step="0.000001" data-type="number"; }
                }
            }
            button type="submit" { "Create key" }
            (status_region(&format!("{family}-create-status")))
        }
    }
}

/// The operator's own model provider keys (`docs/models.md`): vendor, how the key starts, when
/// it was set, and a button to delete it; never the key.
fn model_key_rows(keys: &Result<Vec<Value>, Failed>) -> Markup {
    match keys {
        Err(failed) => html! { p.error { (human(failed)) } },
        Ok(keys) if keys.is_empty() => {
            html! { p.empty { "No model key yet: agents use this host's default key for a vendor, if it has one." } }
        }
        Ok(keys) => html! {
            div.scroll { table.keys data-family="model" {
                thead { tr { th { "Vendor" } th { "Key starts" } th { "Set" } th { span.visually-hidden { "Actions" } } } }
                tbody { @for key in keys { tr {
                    td { (text(&key["vendor"])) }
                    td { code.prefix { (text(&key["keyPrefix"])) "…" } }
                    td { (time(&key["updatedAt"])) }
                    td { button.danger type="button"
                        data-revoke=(format!("/web-api/account/model-keys/{}", text(&key["vendor"])))
                        data-name=(format!("the {} key", text(&key["vendor"]))) { "Delete" } }
                } } }
            } }
        },
    }
}

fn model_key_form(vendors: &[String]) -> Markup {
    html! {
        form.card data-api="PUT /web-api/account/model-keys/{vendor}" {
            div.field { label for="model-vendor" { "Vendor" }
                select #model-vendor name="vendor" required {
                    @for vendor in vendors { option value=(vendor) { (vendor) } }
                } }
            div.field { label for="model-key" { "API key" }
                input #model-key name="apiKey" type="password" required maxlength="512" autocomplete="off"; }
            button type="submit" { "Save key" }
            (status_region("model-key-status"))
        }
    }
}

pub(crate) async fn page(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/keys");
    }
    let account_keys = web
        .api
        .get("/api/api-keys", &visitor)
        .await
        .map(|body| body["keys"].as_array().cloned().unwrap_or_default());
    let v1_keys = web
        .api
        .get("/api/v1/api-keys", &visitor)
        .await
        .map(|body| body["data"].as_array().cloned().unwrap_or_default());
    let model_keys = web
        .api
        .get("/api/account/model-keys", &visitor)
        .await
        .map(|body| body["modelKeys"].as_array().cloned().unwrap_or_default());
    let vendors: Vec<String> = web
        .state
        .models
        .endpoints()
        .vendors()
        .map(str::to_owned)
        .collect();
    let mcp_url = format!("{}/mcp", web.state.config.public_url.trim_end_matches('/'));
    let mcp_config = serde_json::to_string_pretty(&serde_json::json!({
        "mcpServers": {"crucible": {"type": "http", "url": mcp_url,
                                    "headers": {"Authorization": "Bearer svc_live_…"}}}
    }))
    .unwrap_or_default();
    let main = html! {
        p { "At most 10 active keys, account and v1 together. A key's secret is shown once, when it is created." }
        div #secret-box.card.secret hidden tabindex="-1" role="alert" {
            h2 { "Your new key" }
            p { strong { "Copy it now: it will not be shown again." } }
            div.copy-row { code #secret-key {} button type="button" data-copy="secret-key" { "Copy key" } }
            div #secret-webhook-row.copy-row hidden { span { "Webhook secret: " } code #secret-webhook {}
                button type="button" data-copy="secret-webhook" { "Copy webhook secret" } }
            p { a.button href="/keys" { "I have saved it" } }
        }
        section aria-labelledby="v1-keys" {
            h2 #v1-keys { "Agent keys (v1)" }
            p.muted { "For the agents API (" code { "X-API-Key" } "): create, start and stop agents, read their performance." }
            (key_rows(&v1_keys, "v1", "permissions"))
            details { summary { "Create an agent key" } (create_form("v1")) }
        }
        section aria-labelledby="account-keys" {
            h2 #account-keys { "Account keys" }
            p.muted { "For the account API (" code { "Authorization: Bearer" } "): tournament entries, dungeon runs, account reads." }
            (key_rows(&account_keys, "account", "scopes"))
            details { summary { "Create an account key" } (create_form("account")) }
        }
        section aria-labelledby="mcp" {
            h2 #mcp { "Connect an AI agent (MCP)" }
            p.muted { "Any agent that speaks the Model Context Protocol plays with one of your keys: an account key for tournaments, the dungeon and your account (with spend limits it pays entries from your embedded wallet), an agent key for your agents." }
            div.copy-row { span { "Server URL: " } code #mcp-url { (mcp_url) } button type="button" data-copy="mcp-url" { "Copy URL" } }
            details {
                summary { "A configuration block for desktop assistants" }
                pre { code #mcp-config { (mcp_config) } }
                button type="button" data-copy="mcp-config" { "Copy configuration" }
            }
        }
        section aria-labelledby="model-keys" {
            h2 #model-keys { "Model provider keys" }
            p.muted { "Your own keys for the model vendors your agents think with. Each is sealed on the server, sent only to its vendor, and never shown again: only how it starts." }
            (model_key_rows(&model_keys))
            details { summary { "Add or replace a model key" } (model_key_form(&vendors)) }
        }
        (status_region("revoke-status"))
    };
    Page {
        title: "API keys",
        visitor: &visitor,
        scripts: &[],
        styles: &[],
        main,
    }
    .render(StatusCode::OK)
}
