//! Account API keys: minting, listing, scopes, revocation, expiry and the session-only rule.

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use serde_json::json;

#[tokio::test]
async fn a_created_key_is_shown_once_and_listed_without_its_secret() {
    let app = TestApp::spawn().await;
    let session = app.session("k1@example.com").await;
    let created = app.create_key(&session, json!({"name": "trader"})).await;
    let key = created["key"].as_str().expect("key");
    assert!(key.starts_with("svc_live_"));
    assert_eq!(created["keyPrefix"], key[..12]);
    assert_eq!(created["scopes"], json!(["read", "write"]));
    assert!(created["expiresAt"].is_null());
    assert!(
        created["webhookSecret"].is_null(),
        "no webhook secret without a webhook URL"
    );

    let list = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(list.status, 200);
    let listed = &list.body["keys"][0];
    assert_eq!(listed["keyId"], created["keyId"]);
    assert_eq!(listed["keyPrefix"], created["keyPrefix"]);
    assert_eq!(listed["status"], "active");
    assert!(
        listed.get("key").is_none() && !list.body.to_string().contains(key),
        "secret never listed"
    );
    assert!(listed["lastUsedAt"].is_null());

    // Only the hash is stored.
    let (stored,): (String,) = sqlx::query_as("SELECT key_hash FROM api_keys WHERE id = $1")
        .bind(created["keyId"].as_str())
        .fetch_one(app.state.store.read())
        .await
        .expect("row");
    assert_eq!(stored, crucible::crypto::sha256_hex(key));
}

#[tokio::test]
async fn keys_work_as_bearer_or_x_api_key_and_record_last_use() {
    let app = TestApp::spawn().await;
    let (session, key) = app.account_with_key("k2@example.com", &["read"]).await;
    let by_bearer = app.get("/api/account", Auth::Bearer(&key)).await;
    assert_eq!(by_bearer.status, 200, "{}", by_bearer.body);
    let by_header = app.get("/api/account", Auth::XApiKey(&key)).await;
    assert_eq!(by_header.status, 200);
    assert_eq!(by_bearer.body["id"], by_header.body["id"]);

    let mut last_used = serde_json::Value::Null;
    for _ in 0..100 {
        last_used =
            app.get("/api/api-keys", Auth::Session(&session)).await.body["keys"][0]["lastUsedAt"]
                .clone();
        if last_used.is_string() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(last_used.is_string(), "lastUsedAt recorded");
}

#[tokio::test]
async fn webhook_url_yields_a_secret_once() {
    let app = TestApp::spawn().await;
    let session = app.session("k3@example.com").await;
    let created = app
        .create_key(&session, json!({"name": "hooks", "webhookUrl": "https://hooks.example.com/crucible", "expiresInDays": 30}))
        .await;
    let secret = created["webhookSecret"].as_str().expect("webhook secret");
    assert!(secret.starts_with("whsec_"));
    assert!(created["expiresAt"].is_string());
    let list = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert!(!list.body.to_string().contains(secret));
    assert_eq!(
        list.body["keys"][0]["webhookUrl"],
        "https://hooks.example.com/crucible"
    );
}

#[tokio::test]
async fn invalid_creation_requests_are_refused_and_create_nothing() {
    let app = TestApp::spawn().await;
    let session = app.session("k4@example.com").await;
    let cases = [
        (json!({"name": ""}), "name"),
        (json!({"name": "x", "scopes": []}), "scopes"),
        (json!({"name": "x", "scopes": ["admin"]}), "admin"),
        (json!({"name": "x", "expiresInDays": 0}), "expiresInDays"),
        (json!({"name": "x", "expiresInDays": 366}), "expiresInDays"),
        (json!({"name": "x", "expiry": 400}), "expiresInDays"),
        (
            json!({"name": "x", "webhookUrl": "not a url"}),
            "webhookUrl",
        ),
        (json!({"scopes": ["read"]}), "name"),
    ];
    for (body, mentions) in cases {
        let response = app
            .post("/api/api-keys", Auth::Session(&session), body.clone())
            .await;
        assert_eq!(response.status, 400, "{body}: {}", response.body);
        assert!(
            response.error().contains(mentions),
            "{body}: {}",
            response.error()
        );
    }
    let list = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(list.body["keys"], json!([]));
    let accepted = app
        .create_key(
            &session,
            json!({"name": "x", "expiry": 365, "scopes": ["write", "read", "write"]}),
        )
        .await;
    assert_eq!(accepted["scopes"], json!(["read", "write"]));
}

#[tokio::test]
async fn the_eleventh_active_key_is_a_conflict_until_one_is_revoked() {
    let app = TestApp::spawn().await;
    let session = app.session("k5@example.com").await;
    let mut ids = Vec::new();
    for n in 0..10 {
        ids.push(
            app.create_key(&session, json!({"name": format!("k{n}")}))
                .await["keyId"]
                .clone(),
        );
    }
    let eleventh = app
        .post(
            "/api/api-keys",
            Auth::Session(&session),
            json!({"name": "k10"}),
        )
        .await;
    assert_eq!(eleventh.status, 409);
    assert!(
        eleventh.error().contains("at most 10"),
        "{}",
        eleventh.error()
    );
    let revoked = app
        .delete(
            &format!("/api/api-keys/{}", ids[0].as_str().expect("id")),
            Auth::Session(&session),
        )
        .await;
    assert_eq!(revoked.status, 200);
    app.create_key(&session, json!({"name": "k10"})).await;
}

#[tokio::test]
async fn concurrent_creations_never_exceed_ten_active_keys() {
    let app = TestApp::spawn().await;
    let session = app.session("k6@example.com").await;
    let attempts = (0..14).map(|n| {
        app.post(
            "/api/api-keys",
            Auth::Session(&session),
            json!({"name": format!("c{n}")}),
        )
    });
    let statuses: Vec<u16> = futures_util::future::join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        10,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        4,
        "{statuses:?}"
    );
}

#[tokio::test]
async fn revoked_and_expired_keys_stop_working_at_once() {
    let app = TestApp::spawn().await;
    let session = app.session("k7@example.com").await;
    let revoked = app.create_key(&session, json!({"name": "r"})).await;
    let key = revoked["key"].as_str().expect("key");
    assert_eq!(app.get("/api/account", Auth::Bearer(key)).await.status, 200);
    let path = format!("/api/api-keys/{}", revoked["keyId"].as_str().expect("id"));
    let response = app.delete(&path, Auth::Session(&session)).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body["status"], "revoked");
    let refused = app.get("/api/account", Auth::Bearer(key)).await;
    assert_eq!(refused.status, 401);
    assert!(refused.error().contains("revoked"));
    assert_eq!(
        app.delete(&path, Auth::Session(&session)).await.status,
        200,
        "revoking twice is harmless"
    );

    let expiring = app
        .create_key(&session, json!({"name": "e", "expiresInDays": 1}))
        .await;
    let key = expiring["key"].as_str().expect("key");
    assert_eq!(app.get("/api/account", Auth::Bearer(key)).await.status, 200);
    app.advance(Duration::days(1) + Duration::seconds(1));
    let expired = app.get("/api/account", Auth::Bearer(key)).await;
    assert_eq!(expired.status, 401);
    assert!(expired.error().contains("expired"));
    let listed = app.get("/api/api-keys", Auth::Session(&session)).await;
    let mut statuses: Vec<&str> = listed.body["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k["status"].as_str().expect("s"))
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, ["expired", "revoked"]);

    let unknown = app
        .get("/api/account", Auth::Bearer("svc_live_doesnotexist"))
        .await;
    assert_eq!(unknown.status, 401);
    let not_a_key = app.get("/api/account", Auth::Bearer("hello")).await;
    assert_eq!(not_a_key.status, 401);
}

#[tokio::test]
async fn keys_never_manage_keys() {
    let app = TestApp::spawn().await;
    let (session, key) = app
        .account_with_key("k8@example.com", &["read", "write"])
        .await;
    for auth in [Auth::Bearer(&key), Auth::XApiKey(&key)] {
        assert_eq!(app.get("/api/api-keys", auth).await.status, 403);
        let minted = app
            .post("/api/api-keys", auth, json!({"name": "escalate"}))
            .await;
        assert_eq!(minted.status, 403);
        assert!(minted.error().contains("API keys cannot"));
        assert_eq!(app.delete("/api/api-keys/anything", auth).await.status, 403);
    }
    assert_eq!(app.get("/api/api-keys", Auth::None).await.status, 401);
    assert_eq!(
        app.get("/api/api-keys", Auth::Session(&session)).await.body["keys"]
            .as_array()
            .expect("keys")
            .len(),
        1
    );
}

#[tokio::test]
async fn one_account_cannot_see_or_revoke_anothers_keys() {
    let app = TestApp::spawn().await;
    let alice = app.session("alice@example.com").await;
    let bob = app.session("bob@example.com").await;
    let alices = app.create_key(&alice, json!({"name": "a"})).await;
    assert_eq!(
        app.get("/api/api-keys", Auth::Session(&bob)).await.body["keys"],
        json!([])
    );
    let path = format!("/api/api-keys/{}", alices["keyId"].as_str().expect("id"));
    assert_eq!(app.delete(&path, Auth::Session(&bob)).await.status, 404);
    assert_eq!(
        app.get(
            "/api/account",
            Auth::Bearer(alices["key"].as_str().expect("key"))
        )
        .await
        .status,
        200
    );
}
