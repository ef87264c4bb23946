//! The `v1` family's keys, authentication, error envelope and tournament list.

use crate::helpers::{Auth, Body, TestApp, v1_code};
use chrono::Duration;
use serde_json::json;

#[tokio::test]
async fn v1_keys_are_minted_listed_and_revoked_with_the_session_only() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let created = app
        .v1_key_with(
            &session,
            &["agents:start", "agents:read"],
            Some("https://hooks.example.com/crucible"),
        )
        .await;
    let key = created["key"].as_str().expect("key");
    assert!(key.starts_with("svc_live_"));
    assert!(
        created["webhookSecret"]
            .as_str()
            .expect("secret")
            .starts_with("whsec_")
    );
    assert_eq!(
        created["permissions"],
        json!(["agents:read", "agents:start"])
    );

    let listed = app.get("/api/v1/api-keys", Auth::Session(&session)).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["success"], true);
    let keys = listed.body["data"].as_array().expect("keys");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0]["keyPrefix"], key[..12]);
    assert!(keys[0].get("key").is_none() && keys[0].get("webhookSecret").is_none());

    // A key never manages keys, whatever family.
    for auth in [Auth::XApiKey(key), Auth::Bearer(key)] {
        let refused = app.get("/api/v1/api-keys", auth).await;
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert_eq!(v1_code(&refused), "FORBIDDEN");
    }
    let anonymous = app.get("/api/v1/api-keys", Auth::None).await;
    assert_eq!(v1_code(&anonymous), "UNAUTHORIZED");

    let key_id = created["keyId"].as_str().expect("id");
    let revoked = app
        .delete(
            &format!("/api/v1/api-keys/{key_id}"),
            Auth::Session(&session),
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    assert_eq!(revoked.body["data"]["status"], "revoked");
    let after = app.get("/api/v1/public/agents", Auth::XApiKey(key)).await;
    assert_eq!(after.status, 401);
    assert_eq!(v1_code(&after), "UNAUTHORIZED");

    // v1 keys are not account keys and the other way round.
    let account = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(account.body["keys"].as_array().expect("keys").len(), 0);
    let (_, account_key) = app.account_with_key("other@example.com", &["read"]).await;
    let wrong_family = app
        .get("/api/v1/public/agents", Auth::XApiKey(&account_key))
        .await;
    assert_eq!(v1_code(&wrong_family), "UNAUTHORIZED");
    let v1_key = app.v1_key(&session).await;
    let on_account_api = app.get("/api/account", Auth::Bearer(&v1_key)).await;
    assert_eq!(on_account_api.status, 401);
}

#[tokio::test]
async fn bad_key_requests_are_validation_errors_naming_the_field() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let cases = [
        (
            json!({"name": "k", "permissions": ["agents:fly"]}),
            "permissions",
        ),
        (json!({"name": "k", "permissions": []}), "permissions"),
        (json!({"name": "", "permissions": ["agents:read"]}), "name"),
        (
            json!({"name": "k", "permissions": ["agents:read"], "webhookUrl": "nope"}),
            "webhookUrl",
        ),
        (
            json!({"name": "k", "permissions": ["agents:read"], "expiresInDays": 0}),
            "expiresInDays",
        ),
    ];
    for (body, field) in cases {
        let response = app
            .post("/api/v1/api-keys", Auth::Session(&session), body)
            .await;
        assert_eq!(response.status, 400, "{}", response.body);
        assert_eq!(v1_code(&response), "VALIDATION_ERROR");
        assert_eq!(response.body["error"]["details"]["field"], field);
    }
    let missing = app
        .post(
            "/api/v1/api-keys",
            Auth::Session(&session),
            json!({"name": "k"}),
        )
        .await;
    assert_eq!(v1_code(&missing), "VALIDATION_ERROR");
    let listed = app.get("/api/v1/api-keys", Auth::Session(&session)).await;
    assert_eq!(listed.body["data"], json!([]), "nothing was created");
}

#[tokio::test]
async fn unknown_routes_wrong_methods_and_bad_json_answer_in_the_v1_envelope() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;

    let unknown = app.get("/api/v1/public/nothing", Auth::XApiKey(&key)).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(v1_code(&unknown), "NOT_FOUND");
    // The family's root, and what a client makes of `..` in a v1 path, are the family's too.
    for (method, path) in [
        ("GET", "/api/v1"),
        ("GET", "/api/v1/"),
        ("DELETE", "/api/v1/api-keys/.."),
    ] {
        let root = app.request(method, path, Auth::XApiKey(&key), None).await;
        assert!(
            root.status == 404 || root.status == 405,
            "{method} {path}: {}",
            root.status
        );
        assert_eq!(
            root.body["success"], false,
            "{method} {path}: {}",
            root.body
        );
    }

    let wrong_method = app
        .request(
            "DELETE",
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            None,
        )
        .await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(v1_code(&wrong_method), "METHOD_NOT_ALLOWED");

    for body in [
        Body::Raw("application/json", b"{not json".to_vec()),
        Body::Raw("text/plain", b"{}".to_vec()),
    ] {
        let response = app
            .request(
                "POST",
                "/api/v1/public/agents/create",
                Auth::XApiKey(&key),
                Some(body),
            )
            .await;
        assert_eq!(response.status, 400, "{}", response.body);
        assert_eq!(v1_code(&response), "VALIDATION_ERROR");
    }

    // The platform family keeps its own form.
    let platform = app.get("/api/nothing", Auth::None).await;
    assert!(platform.body["error"].is_string());
}

#[tokio::test]
async fn each_route_demands_its_permission() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let full = app.v1_key(&session).await;
    let agent = app.create_agent(&full, "perm_agent", "fighter", "1h").await;
    let agent_id = agent["agentId"].as_str().expect("id");
    let routes = [
        ("GET", "/api/v1/public/agents".to_owned(), "agents:read"),
        (
            "POST",
            "/api/v1/public/agents/create".to_owned(),
            "agents:write",
        ),
        (
            "POST",
            format!("/api/v1/public/agents/{agent_id}/start"),
            "agents:start",
        ),
        (
            "POST",
            format!("/api/v1/public/agents/{agent_id}/stop"),
            "agents:stop",
        ),
        (
            "GET",
            format!("/api/v1/public/agents/{agent_id}/performance"),
            "agents:read",
        ),
        ("GET", "/api/v1/public/strategies".to_owned(), "agents:read"),
        (
            "GET",
            "/api/v1/webhooks/deliveries".to_owned(),
            "agents:read",
        ),
    ];
    for (method, path, needed) in &routes {
        let others: Vec<&str> = ["agents:read", "agents:write", "agents:start", "agents:stop"]
            .into_iter()
            .filter(|p| p != needed)
            .collect();
        let lacking = app.v1_key_with(&session, &others, None).await;
        let lacking = lacking["key"].as_str().expect("key");
        let body = Some(Body::Json(json!({})));
        let refused = app
            .request(method, path, Auth::XApiKey(lacking), body)
            .await;
        assert_eq!(refused.status, 403, "{method} {path}: {}", refused.body);
        assert_eq!(v1_code(&refused), "FORBIDDEN");
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .expect("message")
                .contains(needed)
        );

        let missing = app.request(method, path, Auth::None, None).await;
        assert_eq!(missing.status, 401, "{method} {path}");
        assert_eq!(v1_code(&missing), "UNAUTHORIZED");
        let invalid = app
            .request(method, path, Auth::XApiKey("svc_live_notakey"), None)
            .await;
        assert_eq!(v1_code(&invalid), "UNAUTHORIZED");
    }
}

#[tokio::test]
async fn rate_limits_are_per_account_and_say_when_to_retry() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    for n in 0..10 {
        app.create_agent(&key, &format!("agent_{n}"), "rogue", "1h")
            .await;
    }
    let eleventh = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            json!({"name": "x", "username": "agent_x", "class": "rogue", "modelId": "a/b",
                   "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"}}}),
        )
        .await;
    assert_eq!(eleventh.status, 429, "{}", eleventh.body);
    assert_eq!(v1_code(&eleventh), "RATE_LIMITED");
    let retry_after = eleventh.body["error"]["details"]["retryAfter"]
        .as_u64()
        .expect("retryAfter");
    assert!(retry_after >= 1);
    assert!(eleventh.headers.contains_key("retry-after"));

    // Reads have their own budget; a new key of the same account does not reset the account's
    // budget, and another account has its own.
    let listed = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    assert_eq!(listed.status, 200);
    let same_account = app.v1_key(&session).await;
    let refused = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&same_account),
            json!({"name": "y", "username": "agent_y", "class": "rogue", "modelId": "a/b",
                   "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"}}}),
        )
        .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    let other_session = app.session("other-op@example.com").await;
    let other = app.v1_key(&other_session).await;
    app.create_agent(&other, "agent_other", "rogue", "1h").await;
}

#[tokio::test]
async fn the_v1_tournament_list_pages_filters_and_speaks_its_own_status_names() {
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    let key = app.v1_key(&session).await;
    for (id, starts_in) in [("past", -48), ("live", -1), ("soon", 5)] {
        let mut new = app.new_tournament(id, 0, 50, Duration::hours(starts_in), 24);
        new.name = format!("Cup {id}");
        app.create_tournament(new).await;
    }
    let all = app
        .get("/api/v1/public/tournaments?pageSize=2", Auth::XApiKey(&key))
        .await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(all.body["success"], true);
    assert_eq!(
        all.body["pagination"],
        json!({"pageIndex": 0, "pageSize": 2, "totalCount": 3, "totalPages": 2})
    );
    let item = &all.body["data"][0];
    for field in [
        "id",
        "name",
        "status",
        "currentParticipants",
        "maxParticipants",
    ] {
        assert!(!item[field].is_null(), "{field} in {item}");
    }

    for (status, id) in [
        ("active", "live"),
        ("completed", "past"),
        ("upcoming", "soon"),
    ] {
        let page = app
            .get(
                &format!("/api/v1/public/tournaments?status={status}"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        let data = page.body["data"].as_array().expect("data");
        assert_eq!(data.len(), 1, "{status}: {}", page.body);
        assert_eq!(data[0]["id"], id);
        assert_eq!(data[0]["status"], status);
    }
    let sorted = app
        .get(
            "/api/v1/public/tournaments?orderBy=name&order=asc&search=cup",
            Auth::XApiKey(&key),
        )
        .await;
    let names: Vec<&str> = sorted.body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["Cup live", "Cup past", "Cup soon"]);
    let second = app
        .get(
            "/api/v1/public/tournaments?pageIndex=1&pageSize=2",
            Auth::XApiKey(&key),
        )
        .await;
    assert_eq!(second.body["data"].as_array().expect("data").len(), 1);

    for (query, field) in [
        ("status=live", "status"),
        ("pageSize=51", "pageSize"),
        ("pageIndex=-1", "pageIndex"),
        ("orderBy=prize", "orderBy"),
        ("order=up", "order"),
        ("visibility=secret", "visibility"),
    ] {
        let response = app
            .get(
                &format!("/api/v1/public/tournaments?{query}"),
                Auth::XApiKey(&key),
            )
            .await;
        assert_eq!(response.status, 400, "{query}: {}", response.body);
        assert_eq!(response.body["error"]["details"]["field"], field);
    }
    let anonymous = app.get("/api/v1/public/tournaments", Auth::None).await;
    assert_eq!(v1_code(&anonymous), "UNAUTHORIZED");
}
