//! The admin pages (`/admin…`), front ends of `/api/admin/*` (docs/admin.md): account search and
//! detail with suspension, agents across accounts, banned components, manual disqualification,
//! the payout and refund queue with retry, and the audit log. Like every page they read through
//! the API as the visitor, so a non-admin sees the API's 403 in its own words.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use crate::web::Web;
use crate::web::internal::Visitor;
use crate::web::layout::{
    Page, failure, short, sign_in_first, status_region, text, time, url_escape,
};

fn page(visitor: &Visitor, title: &str, main: Markup) -> Response {
    Page {
        title,
        visitor,
        scripts: &[],
        styles: &[],
        main: html! { (nav()) (main) },
    }
    .render(StatusCode::OK)
}

fn nav() -> Markup {
    html! {
        nav.subnav aria-label="Admin" {
            a href="/admin" { "Accounts" } " · " a href="/admin/agents" { "Agents" } " · "
            a href="/admin/components" { "Banned components" } " · " a href="/admin/tournaments" { "Disqualifications" } " · "
            a href="/admin/payouts" { "Payouts and refunds" } " · " a href="/admin/audit" { "Audit log" }
        }
    }
}

fn list<'a>(body: &'a Value, member: &str) -> &'a [Value] {
    body[member]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A one-button form: `method path` through `/web-api`, with a confirmation.
fn action(method: &str, path: &str, label: &str, confirm: &str) -> Markup {
    html! {
        form.inline data-api=(format!("{method} /web-api{path}")) data-confirm=(confirm) {
            button.danger type="submit" { (label) }
            (status_region(&format!("status-{}", crate::crypto::sha256_hex(path).get(..8).unwrap_or_default())))
        }
    }
}

fn reason_field(id: &str) -> Markup {
    html! {
        div.field { label for=(id) { "Reason (shown to the people it concerns)" }
            input id=(id) name="reason" required maxlength="500" autocomplete="off"; }
    }
}

#[derive(Deserialize)]
pub(crate) struct SearchQuery {
    search: Option<String>,
}

pub(crate) async fn accounts(
    State(web): State<Web>,
    visitor: Visitor,
    Query(query): Query<SearchQuery>,
) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/admin");
    }
    let search = query.search.unwrap_or_default();
    let found = match web
        .api
        .get(
            &format!("/api/admin/accounts?search={}", url_escape(&search)),
            &visitor,
        )
        .await
    {
        Ok(found) => found,
        Err(failed) => return failure(&visitor, "Admin", &failed),
    };
    let main = html! {
        form method="get" action="/admin" role="search" {
            div.field { label for="search" { "E-mail, name, account id or wallet" }
                input #search name="search" value=(search) autocomplete="off"; }
            button type="submit" { "Search" }
        }
        div.scroll { table {
            thead { tr { th { "Account" } th { "E-mail" } th { "Name" } th { "Created" } th { "Status" } } }
            tbody { @for account in list(&found, "accounts") { tr {
                td { a href=(format!("/admin/accounts/{}", url_escape(&text(&account["accountId"])))) { code { (text(&account["accountId"])) } } }
                td { (text(&account["email"])) }
                td { (text(&account["displayName"])) }
                td { (time(&account["createdAt"])) }
                td { @if account["suspendedAt"].is_string() { span.badge.error { "suspended" } }
                     @else if account["isAdmin"] == true { span.badge { "admin" } } @else { "active" } }
            } } }
        } }
    };
    page(&visitor, "Admin: accounts", main)
}

pub(crate) async fn account(
    State(web): State<Web>,
    visitor: Visitor,
    Path(id): Path<String>,
) -> Response {
    if !visitor.signed_in() {
        return sign_in_first(&format!("/admin/accounts/{id}"));
    }
    let escaped = url_escape(&id);
    let detail = match web
        .api
        .get(&format!("/api/admin/accounts/{escaped}"), &visitor)
        .await
    {
        Ok(detail) => detail,
        Err(failed) => return failure(&visitor, "Admin: account", &failed),
    };
    let log = web
        .api
        .get(
            &format!("/api/admin/audit?accountId={escaped}&limit=50"),
            &visitor,
        )
        .await
        .unwrap_or(Value::Null);
    let suspended = detail["suspendedAt"].is_string();
    let main = html! {
        dl.facts {
            dt { "Account" } dd { code { (id) } }
            dt { "E-mail" } dd { (text(&detail["email"])) }
            dt { "Created" } dd { (time(&detail["createdAt"])) }
            dt { "Status" } dd { @if suspended { span.badge.error { "suspended" } " " (text(&detail["suspensionReason"])) } @else { "active" } }
        }
        @if suspended {
            (action("POST", &format!("/admin/accounts/{escaped}/unsuspend"), "Lift the suspension",
                "Lift the suspension? Its keys and sign-in work again; its agents stay stopped."))
        } @else {
            details { summary { "Suspend this account" }
                form.card data-api=(format!("POST /web-api/admin/accounts/{escaped}/suspend"))
                    data-confirm="Suspend this account? Its keys stop working, its sessions end and its agents stop." {
                    (reason_field("suspend-reason"))
                    button.danger type="submit" { "Suspend" }
                    (status_region("suspend-status"))
                }
            }
        }
        h2 { "Wallets" }
        ul { @for wallet in list(&detail, "wallets") { li { code { (text(&wallet["address"])) } " (" (text(&wallet["kind"])) ")" } } }
        h2 { "Keys" }
        div.scroll { table {
            thead { tr { th { "Name" } th { "Family" } th { "Prefix" } th { "Scopes" } th { "Created" } th { "Revoked" } } }
            tbody { @for key in list(&detail, "keys") { tr {
                td { (text(&key["name"])) } td { (text(&key["family"])) } td { code { (text(&key["keyPrefix"])) "…" } }
                td { (text(&key["scopes"])) } td { (time(&key["createdAt"])) }
                td { @if key["revokedAt"].is_string() { (time(&key["revokedAt"])) } @else { "—" } }
            } } }
        } }
        h2 { "Agents" }
        (agent_table(list(&detail, "agents")))
        h2 { "Tournament entries" }
        div.scroll { table {
            thead { tr { th { "Tournament" } th { "Wallet" } th { "Registered" } th { "Disqualified" } } }
            tbody { @for entry in list(&detail, "entries") { tr {
                td { a href=(format!("/tournaments/{}", url_escape(&text(&entry["tournamentId"])))) { (text(&entry["tournamentId"])) } }
                td { (short(&entry["wallet"])) } td { (time(&entry["registeredAt"])) } td { (text(&entry["disqualifiedReason"])) }
            } } }
        } }
        h2 { "Audit log" }
        (audit_table(list(&log, "entries")))
    };
    page(&visitor, "Admin: account", main)
}

fn agent_table(agents: &[Value]) -> Markup {
    html! {
        div.scroll { table {
            thead { tr { th { "Agent" } th { "Account" } th { "Class" } th { "Status" } th { "Ticks" } th { "Faults" } th { "Component" } } }
            tbody { @for agent in agents { tr {
                td { (text(&agent["name"])) br; code.muted { (text(&agent["agentId"])) } }
                td { a href=(format!("/admin/accounts/{}", url_escape(&text(&agent["accountId"])))) { code { (text(&agent["accountId"])) } } }
                td { (text(&agent["class"])) }
                td { span class=(format!("badge {}", text(&agent["status"]))) { (text(&agent["status"])) } " " (text(&agent["statusReason"])) }
                td.num { (text(&agent["ticks"])) }
                td.num { (text(&agent["faults"])) " " span.muted { (text(&agent["lastFault"])) } }
                td { @if agent["strategyComponent"].is_string() { code.wrap { (text(&agent["strategyComponent"])) } } @else { "built-in" } }
            } } }
        } }
    }
}

#[derive(Deserialize)]
pub(crate) struct AgentQuery {
    status: Option<String>,
}

pub(crate) async fn agents(
    State(web): State<Web>,
    visitor: Visitor,
    Query(query): Query<AgentQuery>,
) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/admin/agents");
    }
    let status = query.status.unwrap_or_default();
    let path = if status.is_empty() {
        "/api/admin/agents".to_owned()
    } else {
        format!("/api/admin/agents?status={}", url_escape(&status))
    };
    let found = match web.api.get(&path, &visitor).await {
        Ok(found) => found,
        Err(failed) => return failure(&visitor, "Admin: agents", &failed),
    };
    let main = html! {
        form method="get" action="/admin/agents" {
            label for="status" { "Status " }
            select #status name="status" {
                @for choice in ["", "active", "idle", "unfunded", "error"] {
                    option value=(choice) selected[choice == status] { @if choice.is_empty() { "any" } @else { (choice) } }
                }
            }
            " " button type="submit" { "Filter" }
        }
        (agent_table(list(&found, "agents")))
    };
    page(&visitor, "Admin: agents", main)
}

pub(crate) async fn components(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/admin/components");
    }
    let banned = match web.api.get("/api/admin/components/banned", &visitor).await {
        Ok(banned) => banned,
        Err(failed) => return failure(&visitor, "Admin: components", &failed),
    };
    let main = html! {
        form.card data-api="POST /web-api/admin/components/{sha256}/ban"
            data-confirm="Ban this component? Every agent running it stops, and nobody can upload it again." {
            div.field { label for="sha256" { "Component SHA-256 (its strategy type)" }
                input #sha256 name="sha256" required pattern="[0-9a-fA-F]{64}" autocomplete="off"; }
            (reason_field("ban-reason"))
            button.danger type="submit" { "Ban" }
            (status_region("ban-status"))
        }
        div.scroll { table {
            thead { tr { th { "Component" } th { "Reason" } th { "By" } th { "Since" } th { span.visually-hidden { "Actions" } } } }
            tbody { @for component in list(&banned, "components") { tr {
                td { code.wrap { (text(&component["sha256"])) } }
                td { (text(&component["reason"])) } td { (text(&component["bannedBy"])) } td { (time(&component["bannedAt"])) }
                td { (action("DELETE", &format!("/admin/components/{}/ban", text(&component["sha256"])), "Lift the ban",
                    "Lift this ban? Its agents stay stopped until their operators start them.")) }
            } } }
        } }
    };
    page(&visitor, "Admin: banned components", main)
}

pub(crate) async fn tournaments(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/admin/tournaments");
    }
    let log = match web
        .api
        .get(
            "/api/admin/audit?action=tournament.disqualify&limit=100",
            &visitor,
        )
        .await
    {
        Ok(log) => log,
        Err(failed) => return failure(&visitor, "Admin: disqualifications", &failed),
    };
    let main = html! {
        p { "A wallet disqualified by hand is ranked last with the reason on the board and is never paid. "
            "It can be undone until the tournament ends." }
        form.card data-api="POST /web-api/admin/tournaments/{tournamentId}/disqualifications"
            data-confirm="Disqualify this wallet?" {
            div.field { label for="dq-tournament" { "Tournament id" } input #dq-tournament name="tournamentId" required autocomplete="off"; }
            div.field { label for="dq-wallet" { "Wallet" } input #dq-wallet name="wallet" required autocomplete="off"; }
            (reason_field("dq-reason"))
            button.danger type="submit" { "Disqualify" }
            (status_region("dq-status"))
        }
        form.card data-api="DELETE /web-api/admin/tournaments/{tournamentId}/disqualifications/{wallet}"
            data-confirm="Undo this disqualification?" {
            div.field { label for="rq-tournament" { "Tournament id" } input #rq-tournament name="tournamentId" required autocomplete="off"; }
            div.field { label for="rq-wallet" { "Wallet" } input #rq-wallet name="wallet" required autocomplete="off"; }
            button type="submit" { "Undo a disqualification" }
            (status_region("rq-status"))
        }
        h2 { "Recent manual disqualifications" }
        (audit_table(list(&log, "entries")))
    };
    page(&visitor, "Admin: disqualifications", main)
}

#[derive(Deserialize)]
pub(crate) struct PayoutQuery {
    status: Option<String>,
}

pub(crate) async fn payouts(
    State(web): State<Web>,
    visitor: Visitor,
    Query(query): Query<PayoutQuery>,
) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/admin/payouts");
    }
    let status = query.status.unwrap_or_else(|| "pending".to_owned());
    let path = if status.is_empty() {
        "/api/admin/payouts".to_owned()
    } else {
        format!("/api/admin/payouts?status={}", url_escape(&status))
    };
    let queue = match web.api.get(&path, &visitor).await {
        Ok(queue) => queue,
        Err(failed) => return failure(&visitor, "Admin: payouts", &failed),
    };
    let main = html! {
        form method="get" action="/admin/payouts" {
            label for="status" { "Status " }
            select #status name="status" {
                @for choice in ["pending", "failed", "sent", ""] {
                    option value=(choice) selected[choice == status] { @if choice.is_empty() { "any" } @else { (choice) } }
                }
            }
            " " button type="submit" { "Show" }
        }
        div.scroll { table {
            thead { tr { th { "Payout" } th { "Kind" } th { "For" } th { "Wallet" } th.num { "Amount (raw)" } th { "Status" }
                th.num { "Attempts" } th { "Last error" } th { "Created" } th { span.visually-hidden { "Actions" } } } }
            tbody { @for payout in list(&queue, "payouts") { tr {
                td { code { (text(&payout["payoutId"])) } }
                td { (text(&payout["sourceKind"])) } td { (text(&payout["sourceId"])) } td { (short(&payout["wallet"])) }
                td.num { (text(&payout["amountRaw"])) }
                td { span class=(format!("badge {}", text(&payout["status"]))) { (text(&payout["status"])) } }
                td.num { (text(&payout["attempts"])) } td { (text(&payout["lastError"])) } td { (time(&payout["createdAt"])) }
                td { @if payout["status"] != "sent" {
                    (action("POST", &format!("/admin/payouts/{}/retry", url_escape(&text(&payout["payoutId"]))), "Retry now",
                        "Send this payout now? It can still never be paid twice."))
                } }
            } } }
        } }
    };
    page(&visitor, "Admin: payouts and refunds", main)
}

#[derive(Deserialize)]
pub(crate) struct AuditQuery {
    action: Option<String>,
}

fn audit_table(entries: &[Value]) -> Markup {
    html! {
        div.scroll { table {
            thead { tr { th { "When" } th { "Who" } th { "Action" } th { "Subject" } th { "Before → after" } th { "Detail" } } }
            tbody { @for entry in entries { tr {
                td { (time(&entry["at"])) } td { code { (text(&entry["actor"])) } } td { (text(&entry["action"])) }
                td { (text(&entry["subjectKind"])) " " code.wrap { (text(&entry["subjectId"])) } }
                td { code.wrap { @if !entry["before"].is_null() { (entry["before"].to_string()) " → " } (if entry["after"].is_null() { String::new() } else { entry["after"].to_string() }) } }
                td { (text(&entry["detail"])) }
            } } }
        } }
    }
}

pub(crate) async fn audit(
    State(web): State<Web>,
    visitor: Visitor,
    Query(query): Query<AuditQuery>,
) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/admin/audit");
    }
    let action = query.action.unwrap_or_default();
    let path = if action.is_empty() {
        "/api/admin/audit?limit=200".to_owned()
    } else {
        format!("/api/admin/audit?limit=200&action={}", url_escape(&action))
    };
    let log = match web.api.get(&path, &visitor).await {
        Ok(log) => log,
        Err(failed) => return failure(&visitor, "Admin: audit log", &failed),
    };
    let main = html! {
        form method="get" action="/admin/audit" {
            div.field { label for="action" { "Action (e.g. account.suspend, key.create, tournament.cancel)" }
                input #action name="action" value=(action) autocomplete="off"; }
            button type="submit" { "Filter" }
        }
        (audit_table(list(&log, "entries")))
    };
    page(&visitor, "Admin: audit log", main)
}
