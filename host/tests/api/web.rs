//! The web app over plain HTTP: pages render from the API, assets are cached by content, the
//! API answers exactly as before, and every cookie-authenticated write through the web app is
//! refused without this site's origin and the session's token.

use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp};

async fn page(app: &TestApp, path: &str, cookie: Option<&str>) -> (u16, String) {
    let mut request = app.client.get(format!("{}{path}", app.address));
    if let Some(token) = cookie {
        request = request.header("cookie", format!("session-token={token}"));
    }
    let response = request.send().await.expect("page");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

/// The CSRF token a page rendered for this session.
fn csrf_of(html: &str) -> String {
    let start = html
        .find(r#"name="csrf-token" content=""#)
        .expect("csrf meta")
        + 27;
    html[start..start + 64].to_owned()
}

#[tokio::test]
async fn public_pages_render_from_the_api() {
    let app = TestApp::spawn().await;
    let new = app.new_tournament("trn_web", 0, 10, chrono::Duration::hours(-1), 24);
    app.create_tournament(new).await;
    for path in [
        "/",
        "/tournaments",
        "/tournaments/trn_web",
        "/dungeon",
        "/login",
        "/signup",
    ] {
        let (status, html) = page(&app, path, None).await;
        assert_eq!(status, 200, "{path}: {html}");
        assert!(html.starts_with("<!DOCTYPE html>"), "{path}");
        assert!(html.contains(r#"<main id="main""#), "{path}");
    }
    let (_, home) = page(&app, "/", None).await;
    assert!(
        home.contains("Cup trn_web"),
        "the live tournament is on the home page"
    );
    let (_, list) = page(&app, "/tournaments?status=live", None).await;
    assert!(list.contains("/tournaments/trn_web"));
    let (_, none) = page(&app, "/tournaments?status=ended", None).await;
    assert!(
        !none.contains("/tournaments/trn_web"),
        "the API's filter applies"
    );
}

#[tokio::test]
async fn the_api_s_refusals_reach_the_page_in_its_words() {
    let app = TestApp::spawn().await;
    let (status, html) = page(&app, "/tournaments?pageSize=500", None).await;
    assert_eq!(status, 400);
    assert!(html.contains("`pageSize` must be 1 to 50"), "{html}");
    let (status, html) = page(&app, "/tournaments/trn_missing", None).await;
    assert_eq!(status, 404);
    assert!(html.contains("Not found"), "{html}");
}

#[tokio::test]
async fn the_api_answers_exactly_as_before() {
    let app = TestApp::spawn().await;
    let missing = app.get("/api/nope", Auth::None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body, json!({"error": "no route for /api/nope"}));
    let health = app.get("/api/health", Auth::None).await;
    assert_eq!(health.status, 200);
    let v1 = app.get("/api/v1/nope", Auth::None).await;
    assert_eq!(v1.status, 404);
    assert_eq!(v1.body["success"], false);
}

#[tokio::test]
async fn operator_pages_ask_for_a_sign_in_then_show_the_account() {
    let app = TestApp::spawn().await;
    for path in ["/account", "/keys", "/agents", "/webhooks"] {
        let response = app
            .client
            .get(format!("{}{path}", app.address))
            .send()
            .await
            .expect("page");
        assert_eq!(response.status(), 303, "{path}");
        assert_eq!(
            response.headers()["location"],
            format!("/login?next=%2F{}", &path[1..]).as_str()
        );
    }
    let session = app.session("web@example.com").await;
    let (status, html) = page(&app, "/account", Some(&session)).await;
    assert_eq!(status, 200);
    assert!(html.contains("web@example.com"));
    assert!(html.contains("custodial"), "the embedded wallet is listed");
    let (status, html) = page(&app, "/keys", Some(&session)).await;
    assert_eq!(status, 200);
    assert!(html.contains("No key yet."));
}

#[tokio::test]
async fn assets_are_cached_by_content() {
    let app = TestApp::spawn().await;
    let (_, html) = page(&app, "/", None).await;
    let start = html.find("/assets/").expect("an asset link");
    let end = start + html[start..].find('"').expect("end of link");
    let url = &html[start..end];
    assert!(url.ends_with("/app.css"), "{url}");
    let response = app
        .client
        .get(format!("{}{url}", app.address))
        .send()
        .await
        .expect("asset");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(
        response.headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/css")
    );
    let etag = response.headers()["etag"].clone();
    assert!(response.headers().get("content-encoding").is_none());
    let again = app
        .client
        .get(format!("{}{url}", app.address))
        .header("if-none-match", etag.clone())
        .send()
        .await
        .expect("asset");
    assert_eq!(again.status(), 304);

    // A browser asks for gzip: the same file, compressed, under its own tag; either tag of the
    // current content gets a 304.
    let gzipped = app
        .client
        .get(format!("{}{url}", app.address))
        .header("accept-encoding", "gzip, deflate, br")
        .send()
        .await
        .expect("asset");
    assert_eq!(gzipped.status(), 200);
    assert_eq!(gzipped.headers()["content-encoding"], "gzip");
    assert_eq!(gzipped.headers()["vary"], "accept-encoding");
    let gz_etag = gzipped.headers()["etag"].clone();
    assert_ne!(gz_etag, etag);
    let compressed = gzipped.bytes().await.expect("bytes");
    let mut css = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&compressed[..]), &mut css)
        .expect("gunzip");
    let plain = crucible::web::ASSETS
        .iter()
        .find(|asset| asset.name == "app.css")
        .expect("app.css")
        .bytes;
    assert_eq!(css, plain);
    assert!(compressed.len() * 2 < plain.len());
    for tag in [gz_etag, etag] {
        let again = app
            .client
            .get(format!("{}{url}", app.address))
            .header("accept-encoding", "gzip")
            .header("if-none-match", tag)
            .send()
            .await
            .expect("asset");
        assert_eq!(again.status(), 304);
    }

    let stale = app
        .client
        .get(format!("{}/assets/0000000000000000/app.css", app.address))
        .send()
        .await
        .expect("asset");
    assert_eq!(stale.status(), 200);
    assert_eq!(stale.headers()["cache-control"], "no-cache");
}

#[tokio::test]
async fn every_page_s_scripts_and_styles_stay_within_150_kb() {
    // Uncompressed bytes: an upper bound on the compressed weight the budget is about.
    let total: usize = crucible::web::ASSETS
        .iter()
        .map(|asset| asset.bytes.len())
        .sum();
    assert!(
        total <= 150 * 1024,
        "all assets together weigh {total} bytes"
    );
}

#[tokio::test]
async fn web_writes_need_this_origin_and_the_session_token() {
    let app = TestApp::spawn().await;
    let session = app.session("csrf@example.com").await;
    let (_, html) = page(&app, "/keys", Some(&session)).await;
    let token = csrf_of(&html);
    let host = app.address.trim_start_matches("http://").to_owned();
    let origin = app.address.clone();
    let mint = |origin: Option<String>, token: Option<String>| {
        let mut request = app
            .client
            .post(format!("{}/web-api/api-keys", app.address))
            .header("cookie", format!("session-token={session}"))
            .header("host", host.clone())
            .json(&json!({"name": "from the web"}));
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        if let Some(token) = token {
            request = request.header("x-csrf-token", token);
        }
        request.send()
    };
    let other_site = mint(Some("http://127.0.0.1:1".into()), Some(token.clone()))
        .await
        .expect("post");
    assert_eq!(other_site.status(), 403);
    let body: serde_json::Value = other_site.json().await.expect("json");
    assert!(
        body["error"]
            .as_str()
            .expect("error")
            .contains("another site")
    );
    let no_origin = mint(None, Some(token.clone())).await.expect("post");
    assert_eq!(no_origin.status(), 403);
    let no_token = mint(Some(origin.clone()), None).await.expect("post");
    assert_eq!(no_token.status(), 403);
    let wrong_token = mint(Some(origin.clone()), Some("0".repeat(64)))
        .await
        .expect("post");
    assert_eq!(wrong_token.status(), 403);
    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(keys.body["keys"], json!([]), "nothing was minted");

    let minted = mint(Some(origin.clone()), Some(token)).await.expect("post");
    assert_eq!(
        minted.status(),
        201,
        "the same request from the page itself works"
    );
    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(keys.body["keys"].as_array().expect("keys").len(), 1);
    let key_id = keys.body["keys"][0]["keyId"]
        .as_str()
        .expect("key id")
        .to_owned();

    // The API's own validation answers through the web app unchanged.
    let (_, html) = page(&app, "/keys", Some(&session)).await;
    let token = csrf_of(&html);
    let invalid = app
        .client
        .post(format!("{}/web-api/api-keys", app.address))
        .header("cookie", format!("session-token={session}"))
        .header("origin", origin)
        .header("x-csrf-token", token)
        .json(&json!({"name": "x", "expiresInDays": 900}))
        .send()
        .await
        .expect("post");
    assert_eq!(invalid.status(), 400);

    // A route with its own path parameter, reached through the web app.
    let (_, html) = page(&app, "/keys", Some(&session)).await;
    let revoked = app
        .client
        .delete(format!("{}/web-api/api-keys/{key_id}", app.address))
        .header("cookie", format!("session-token={session}"))
        .header("origin", app.address.clone())
        .header("x-csrf-token", csrf_of(&html))
        .send()
        .await
        .expect("delete");
    assert_eq!(revoked.status(), 200);
    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(keys.body["keys"][0]["status"], "revoked");
}

#[tokio::test]
async fn sign_out_is_a_checked_form_post() {
    let app = TestApp::spawn().await;
    let session = app.session("out@example.com").await;
    let (_, html) = page(&app, "/account", Some(&session)).await;
    let token = csrf_of(&html);
    let forged = app
        .client
        .post(format!("{}/logout", app.address))
        .header("cookie", format!("session-token={session}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("csrf=forged")
        .send()
        .await
        .expect("post");
    assert_eq!(forged.status(), 403, "no origin, wrong token");
    let still = app.get("/api/account", Auth::Session(&session)).await;
    assert_eq!(still.status, 200, "the session survived the forged post");

    let signed_out = app
        .client
        .post(format!("{}/logout", app.address))
        .header("cookie", format!("session-token={session}"))
        .header("origin", app.address.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={token}"))
        .send()
        .await
        .expect("post");
    assert_eq!(signed_out.status(), 303);
    assert!(
        signed_out.headers()["set-cookie"]
            .to_str()
            .expect("cookie")
            .contains("Max-Age=0")
    );
    let gone = app.get("/api/account", Auth::Session(&session)).await;
    assert_eq!(gone.status, 401);
}

#[tokio::test]
async fn a_paid_entry_s_qr_code_encodes_the_api_s_memo() {
    let app = TestApp::spawn().await;
    let new = app.new_tournament("trn_paid", 2_000_000, 10, chrono::Duration::hours(1), 24);
    app.create_tournament(new).await;
    let wallet = crate::helpers::TestWallet::new(7).address();
    let response = app
        .client
        .get(format!(
            "{}/tournaments/trn_paid/pay.svg?wallets={wallet}",
            app.address
        ))
        .send()
        .await
        .expect("qr");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "image/svg+xml");
    assert!(response.text().await.expect("svg").contains("<svg"));
    let bad = app
        .client
        .get(format!(
            "{}/tournaments/trn_paid/pay.svg?wallets=nope",
            app.address
        ))
        .send()
        .await
        .expect("qr");
    assert_eq!(
        bad.status(),
        400,
        "the API refuses the wallet, so no QR code"
    );
}

#[tokio::test]
async fn admin_pages_are_for_admins_and_act_through_the_api() {
    let app = TestApp::spawn().await;
    let member = app.session("member@example.com").await;
    let boss = app.session("boss@example.com").await;
    crucible::admin::service::set_admin(
        &app.state.store,
        "boss@example.com",
        true,
        app.state.now(),
    )
    .await
    .expect("grant");

    let (_, home) = page(&app, "/", Some(&member)).await;
    assert!(
        !home.contains(r#"href="/admin""#),
        "no admin link for members"
    );
    for path in [
        "/admin",
        "/admin/agents",
        "/admin/components",
        "/admin/tournaments",
        "/admin/payouts",
        "/admin/audit",
    ] {
        let (status, html) = page(&app, path, Some(&member)).await;
        assert_eq!(status, 403, "{path}: the API's refusal");
        assert!(html.contains("admins"), "{path}");
        let (status, html) = page(&app, path, Some(&boss)).await;
        assert_eq!(status, 200, "{path}: {html}");
        assert!(html.contains(r#"href="/admin""#), "{path}: the admin link");
    }
    let (status, _) = page(&app, "/admin", None).await;
    assert_eq!(status, 303, "sign in first");

    // Find the member, open the account, suspend it through the page's form.
    let (_, found) = page(&app, "/admin?search=member", Some(&boss)).await;
    let member_id = app.get("/api/account", Auth::Session(&member)).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(
        found.contains(&format!("/admin/accounts/{member_id}")),
        "{found}"
    );
    let (status, detail) = page(&app, &format!("/admin/accounts/{member_id}"), Some(&boss)).await;
    assert_eq!(status, 200);
    assert!(
        detail.contains(&format!(
            r#"data-api="POST /web-api/admin/accounts/{member_id}/suspend""#
        )),
        "{detail}"
    );
    let suspended = app
        .client
        .post(format!(
            "{}/web-api/admin/accounts/{member_id}/suspend",
            app.address
        ))
        .header("cookie", format!("session-token={boss}"))
        .header("origin", app.address.clone())
        .header("x-csrf-token", csrf_of(&detail))
        .json(&json!({"reason": "spam"}))
        .send()
        .await
        .expect("post");
    assert_eq!(suspended.status(), 200);
    let (_, detail) = page(&app, &format!("/admin/accounts/{member_id}"), Some(&boss)).await;
    assert!(detail.contains("suspended") && detail.contains("spam"));
    assert!(
        detail.contains("account.suspend"),
        "the account's audit log on its page"
    );
    let (_, log) = page(&app, "/admin/audit?action=account.suspend", Some(&boss)).await;
    assert!(log.contains(&member_id));
}

#[tokio::test]
async fn a_page_that_does_not_exist_is_a_page_and_the_apis_404_stays_json() {
    let app = TestApp::spawn().await;
    let (status, html) = page(&app, "/no/such/page", None).await;
    assert_eq!(status, 404);
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.contains("There is no page at") && html.contains("/no/such/page"));
    let api = app.get("/api/no-such-route", Auth::None).await;
    assert_eq!(api.status, 404);
    assert_eq!(api.error(), "no route for /api/no-such-route");
    let rpc = app.rpc("getHealth", json!([])).await;
    assert_eq!(
        rpc["result"], "ok",
        "the simnet still answers behind the web app"
    );
}

#[tokio::test]
async fn a_signed_in_operator_manages_agents_with_the_session_alone() {
    let app = TestApp::spawn().await;
    let session = app.session("agents@example.com").await;
    let (_, html) = page(&app, "/agents", Some(&session)).await;
    let token = csrf_of(&html);
    assert!(
        !html.contains("svc_live_") && !html.contains("Agent key"),
        "{html}"
    );
    let host = app.address.trim_start_matches("http://").to_owned();
    let call = |method: reqwest::Method, path: &str, body: Option<Value>, token: Option<&str>| {
        let mut request = app
            .client
            .request(method, format!("{}{path}", app.address))
            .header("cookie", format!("session-token={session}"))
            .header("host", host.clone())
            .header("origin", app.address.clone());
        if let Some(token) = token {
            request = request.header("x-csrf-token", token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let create = json!({"name": "Sessioned", "username": "sessioned", "class": "rogue",
                        "modelId": "openai/gpt-4o", "strategy": {"type": "builtin",
                        "tokenPair": {"base": "SOL", "quote": "USDC"}}});

    // The v1 API itself stays key-only for machines: a cookie there is still a 401.
    let with_cookie = app
        .get("/api/v1/public/agents", Auth::Session(&session))
        .await;
    assert_eq!(with_cookie.status, 401, "{}", with_cookie.body);
    // Through the web app a write needs the page's token, like every cookie write.
    let unguarded = call(
        reqwest::Method::POST,
        "/web-api/v1/public/agents/create",
        Some(create.clone()),
        None,
    )
    .await
    .expect("post");
    assert_eq!(unguarded.status(), 403);
    let created = call(
        reqwest::Method::POST,
        "/web-api/v1/public/agents/create",
        Some(create),
        Some(&token),
    )
    .await
    .expect("post");
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.expect("json");
    let agent_id = created["data"]["agentId"].as_str().expect("id").to_owned();
    let listed: Value = call(
        reqwest::Method::GET,
        "/web-api/v1/public/agents",
        None,
        None,
    )
    .await
    .expect("get")
    .json()
    .await
    .expect("json");
    assert_eq!(listed["data"][0]["agentId"], agent_id.as_str());
    // The page is titled by the agent's name; another operator's agent is not found.
    let (status, html) = page(&app, &format!("/agents/{agent_id}"), Some(&session)).await;
    assert_eq!(status, 200);
    assert!(html.contains("<title>Sessioned"), "{html}");
    let stranger = app.session("stranger@example.com").await;
    let (status, _) = page(&app, &format!("/agents/{agent_id}"), Some(&stranger)).await;
    assert_eq!(status, 404);
    let theirs = app
        .client
        .get(format!(
            "{}/web-api/v1/public/agents/{agent_id}",
            app.address
        ))
        .header("cookie", format!("session-token={stranger}"))
        .send()
        .await
        .expect("get");
    assert_eq!(theirs.status(), 404);
    // Signed out, the web app adds nothing: the v1 answer for a call without a key.
    let anonymous = app
        .client
        .get(format!("{}/web-api/v1/public/agents", app.address))
        .send()
        .await
        .expect("get");
    assert_eq!(anonymous.status(), 401);
    // An uploaded strategy is a choice of the creation form.
    let key = app.v1_key(&session).await;
    let uploaded = app
        .upload_strategy(
            &key,
            Some("mine"),
            crucible::sandbox::test_guest("hostile")
                .expect("guest")
                .to_vec(),
        )
        .await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let (_, html) = page(&app, "/agents", Some(&session)).await;
    // Models are suggested for the vendors this host can call.
    for model in [
        "openai/gpt-4o",
        "anthropic/claude-sonnet-4",
        "ollama/llama3.1",
    ] {
        assert!(
            html.contains(&format!("<option value=\"{model}\">")),
            "{model}"
        );
    }
    let kind = uploaded.body["data"]["strategyType"]
        .as_str()
        .expect("type");
    assert!(
        html.contains(&format!("<option value=\"{kind}\">Uploaded: mine")),
        "{html}"
    );
}

#[tokio::test]
async fn api_writes_by_session_cookie_pass_the_same_cross_site_check() {
    let app = TestApp::spawn().await;
    let admin = app.session("csrf-admin@example.com").await;
    crucible::admin::service::set_admin(
        &app.state.store,
        "csrf-admin@example.com",
        true,
        app.state.now(),
    )
    .await
    .expect("grant");
    let (member, key) = app
        .account_with_key("csrf-member@example.com", &["read", "write"])
        .await;
    let member_id = app.get("/api/account", Auth::Session(&member)).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let suspended = app
        .post(
            &format!("/api/admin/accounts/{member_id}/suspend"),
            Auth::Session(&admin),
            json!({"reason": "checking the guard"}),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);
    let unsuspend = format!("{}/api/admin/accounts/{member_id}/unsuspend", app.address);
    let post = |url: String, origin: Option<&str>, token: Option<String>| {
        let mut request = app
            .client
            .post(url)
            .header("cookie", format!("session-token={admin}"));
        if let Some(origin) = origin {
            request = request.header("origin", origin.to_owned());
        }
        if let Some(token) = token {
            request = request.header("x-csrf-token", token);
        }
        request.send()
    };
    let token = crucible::web::csrf_token(&admin);

    // A body-less POST from another origin, the session's token or not: refused, nothing done.
    for (origin, token) in [
        (Some("http://127.0.0.1:9999"), None),
        (Some("http://127.0.0.1:9999"), Some(token.clone())),
        (None, Some(token.clone())),
        (Some(app.address.as_str()), None),
    ] {
        let refused = post(unsuspend.clone(), origin, token).await.expect("post");
        assert_eq!(refused.status(), 403, "{origin:?}");
        let body: Value = refused.json().await.expect("json");
        assert!(body["error"].is_string(), "{body}");
    }
    let audit = app
        .get(
            "/api/admin/audit?action=account.unsuspend",
            Auth::Session(&admin),
        )
        .await;
    assert_eq!(audit.body["entries"], json!([]), "{}", audit.body);

    // The v1 family refuses in its own envelope.
    let v1 = post(
        format!("{}/api/v1/api-keys", app.address),
        Some("http://127.0.0.1:9999"),
        None,
    )
    .await
    .expect("post");
    assert_eq!(v1.status(), 403);
    let body: Value = v1.json().await.expect("json");
    assert_eq!(body["error"]["code"], "FORBIDDEN", "{body}");

    // From this server, with the token: allowed. A key is what counts when one is presented.
    let allowed = post(unsuspend, Some(app.address.as_str()), Some(token))
        .await
        .expect("post");
    assert_eq!(allowed.status(), 200);
    let keyed = app
        .client
        .patch(format!("{}/api/account", app.address))
        .header("cookie", format!("session-token={member}"))
        .header("authorization", format!("Bearer {key}"))
        .json(&json!({"displayName": "Keyed"}))
        .send()
        .await
        .expect("patch");
    assert_eq!(keyed.status(), 200);
}
