//! The account: profile (editable), wallets (link one by signature), payouts, tournament entries
//! and dungeon runs — each the API's account read, with the session cookie.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;

use crate::web::Web;
use crate::web::internal::{Failed, Visitor};
use crate::web::layout::{
    Page, failure, human, percent, short, sign_in_first, status_region, text, time, tx, usdc,
    wallet_signature_steps,
};

fn or_error(answer: &Result<Value, Failed>, show: impl Fn(&Value) -> Markup) -> Markup {
    match answer {
        Ok(value) => show(value),
        Err(failed) => html! { p.error { (human(failed)) } },
    }
}

pub(crate) async fn page(State(web): State<Web>, visitor: Visitor) -> Response {
    if !visitor.signed_in() {
        return sign_in_first("/account");
    }
    let account = match web.api.get("/api/account", &visitor).await {
        Ok(account) => account,
        Err(failed) if failed.status == StatusCode::UNAUTHORIZED => {
            return sign_in_first("/account");
        }
        Err(failed) => return failure(&visitor, "Account", &failed),
    };
    let payouts = web.api.get("/api/account/payouts", &visitor).await;
    let entries = web.api.get("/api/account/tournaments", &visitor).await;
    let runs = web.api.get("/api/account/dungeon-runs", &visitor).await;
    let on_simnet = web.state.chain.simnet().is_some();
    let wallets = account["wallets"].as_array().cloned().unwrap_or_default();
    let main = html! {
        section aria-labelledby="profile" {
            h2 #profile { "Profile" }
            dl.facts {
                dt { "E-mail" } dd { (text(&account["email"])) }
                dt { "Account" } dd { code { (text(&account["id"])) } }
                dt { "Since" } dd { (time(&account["createdAt"])) }
                dt { "Terms accepted" } dd { (time(&account["termsAcceptedAt"])) }
                dt { "Privacy policy accepted" } dd { (time(&account["privacyAcceptedAt"])) }
            }
            form.card data-api="PATCH /web-api/account" data-next="/account" {
                div.field { label for="display-name" { "Display name" }
                    input #display-name name="displayName" data-type="nullable" value=(account["displayName"].as_str().unwrap_or("")) maxlength="40"; }
                div.field { label for="avatar-url" { "Avatar URL" }
                    input #avatar-url name="avatarUrl" type="url" data-type="nullable" value=(account["avatarUrl"].as_str().unwrap_or("")); }
                div.field { label for="bio" { "Bio" }
                    textarea #bio name="bio" data-type="nullable" rows="2" { (account["bio"].as_str().unwrap_or("")) } }
                button type="submit" { "Save profile" }
                (status_region("profile-status"))
            }
        }
        section aria-labelledby="wallets" {
            h2 #wallets { "Wallets" }
            div.scroll { table {
                thead { tr { th { "Address" } th { "Kind" } th { "Linked" } } }
                tbody { @for wallet in &wallets { tr {
                    td { code.wrap { (text(&wallet["address"])) } }
                    td { (text(&wallet["kind"])) } td { (time(&wallet["linkedAt"])) }
                } } }
            } }
            section #wallet-link aria-labelledby="link-title" {
                h3 #link-title { "Link a wallet by signature" }
                p #wallet-found.muted { "Looking for a browser wallet…" }
                div.field { label for="wallet-address" { "Wallet address" }
                    input #wallet-address autocomplete="off"; }
                (wallet_signature_steps("Link this wallet"))
            }
        }
        section aria-labelledby="payouts" {
            h2 #payouts { "Payouts" }
            (or_error(&payouts, |body| {
                let rows = body["payouts"].as_array().cloned().unwrap_or_default();
                html! { @if rows.is_empty() { p.empty { "No prize yet." } } @else { div.scroll { table {
                    thead { tr { th { "From" } th.num { "Rank" } th.num { "Prize" } th { "Status" } th { "Wallet" } th { "Transaction" } } }
                    tbody { @for row in &rows { tr {
                        td { (text(&row["sourceKind"])) " " (text(&row["sourceId"])) }
                        td.num { (text(&row["rank"])) } td.num { (usdc(&row["prizeAwarded"])) }
                        td { (text(&row["status"])) } td { (short(&row["wallet"])) }
                        td { (tx(&row["txSignature"], on_simnet)) }
                    } } }
                } } } }
            }))
        }
        section aria-labelledby="entries" {
            h2 #entries { "Tournament entries" }
            (or_error(&entries, |body| {
                let rows = body["tournaments"].as_array().cloned().unwrap_or_default();
                html! { @if rows.is_empty() { p.empty { "No entry yet." } } @else { div.scroll { table {
                    thead { tr { th { "Tournament" } th { "Status" } th { "Wallet" } th { "Payment" } th.num { "Final rank" } th.num { "Final PnL" } th.num { "Prize" } } }
                    tbody { @for row in &rows { tr {
                        td { a href=(format!("/tournaments/{}", text(&row["tournamentId"]))) { (text(&row["name"])) } }
                        td { (text(&row["status"])) } td { (short(&row["wallet"])) }
                        td { @if row["txSignature"].is_null() { "free" } @else { (tx(&row["txSignature"], on_simnet)) } }
                        td.num { (text(&row["finalRank"])) } td.num { (percent(&row["finalPnl"])) }
                        td.num { (usdc(&row["prizeAwarded"])) }
                    } } }
                } } } }
            }))
        }
        section aria-labelledby="runs" {
            h2 #runs { "Dungeon runs" }
            (or_error(&runs, |body| {
                let rows = body["runs"].as_array().cloned().unwrap_or_default();
                html! { @if rows.is_empty() { p.empty { "No run yet." } } @else { div.scroll { table {
                    thead { tr { th { "Run" } th { "Day" } th { "Class" } th { "Status" } th.num { "Score" } th.num { "Floor" } } }
                    tbody { @for row in &rows { tr {
                        td { a href=(format!("/dungeon/runs/{}", text(&row["runId"]))) { (text(&row["runId"])) } }
                        td { (text(&row["dungeonId"])) } td { (text(&row["class"])) } td { (text(&row["status"])) }
                        td.num { (text(&row["score"])) } td.num { (text(&row["deepestFloor"])) }
                    } } }
                } } } }
            }))
        }
    };
    Page {
        title: "Account",
        visitor: &visitor,
        scripts: &["wallet.js"],
        styles: &[],
        main,
    }
    .render(StatusCode::OK)
}
