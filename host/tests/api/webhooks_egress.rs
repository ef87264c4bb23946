//! Webhook egress: by default a key owner cannot make the server POST into its own network —
//! neither with an IP literal nor with a name that resolves to a private address.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::helpers::server_process::ServerProcess;
use crate::helpers::{Auth, TestApp};
use serde_json::json;

#[tokio::test]
async fn webhooks_to_private_addresses_are_refused_unless_allowed() {
    let hits = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let counter = hits.clone();
    let router = axum::Router::new().fallback(move || {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            "ok"
        }
    });
    tokio::spawn(async move { axum::serve(listener, router).await.expect("receiver") });

    let app = TestApp::spawn_with(|config| config.webhook_allow_private = false).await;
    let session = app.session("op@example.com").await;
    // A literal private address is refused when the key is made; a name, when it is resolved.
    let literal = app
        .post(
            "/api/api-keys",
            Auth::Session(&session),
            json!({"name": "literal", "webhookUrl": format!("http://127.0.0.1:{port}/hook")}),
        )
        .await;
    assert_eq!(literal.status, 400, "{}", literal.body);
    app.create_key(
        &session,
        json!({"name": "localhost", "webhookUrl": format!("http://localhost:{port}/hook")}),
    )
    .await;
    let account_id: (String,) = sqlx::query_as("SELECT id FROM accounts")
        .fetch_one(app.state.store.read())
        .await
        .expect("account");
    let mut tx = app.state.store.begin().await.expect("tx");
    let queued = crucible::webhooks::enqueue(
        &mut tx,
        &account_id.0,
        crucible::webhooks::Event::AgentStarted,
        json!({"agentId": "a"}),
        app.state.now(),
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    assert_eq!(queued, 1);

    crucible::webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing reached the private receiver"
    );
    let deliveries = crucible::webhooks::recent_deliveries(&app.state.store, &account_id.0, 10)
        .await
        .expect("deliveries");
    assert_eq!(deliveries.len(), 1);
    for delivery in &deliveries {
        assert_eq!(delivery.status, "pending", "{delivery:?}");
        let error = delivery.last_error.as_deref().unwrap_or_default();
        assert!(error.contains("private or reserved"), "{error}");
        assert_eq!(
            delivery.error_category.as_deref(),
            Some("destination_refused")
        );
    }

    // The same server configured to allow private receivers delivers them.
    let app = TestApp::spawn().await;
    let session = app.session("op@example.com").await;
    app.create_key(
        &session,
        json!({"name": "ok", "webhookUrl": format!("http://localhost:{port}/hook")}),
    )
    .await;
    let account = app.get("/api/account", Auth::Session(&session)).await;
    let account_id = account.body["id"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| {
            panic!("account id in {}", account.body);
        });
    let mut tx = app.state.store.begin().await.expect("tx");
    crucible::webhooks::enqueue(
        &mut tx,
        &account_id,
        crucible::webhooks::Event::AgentStarted,
        json!({"agentId": "a"}),
        app.state.now(),
    )
    .await
    .expect("enqueue");
    tx.commit().await.expect("commit");
    crucible::webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn webhook_urls_naming_reserved_addresses_are_refused_at_key_creation() {
    let app = TestApp::spawn_with(|config| config.webhook_allow_private = false).await;
    let session = app.session("nat64@example.com").await;
    for url in [
        "http://[64:ff9b::7f00:1]/hook",
        "http://[64:ff9b::808:808]/hook",
        "http://[::ffff:10.0.0.1]/hook",
        "http://169.254.169.254/latest",
    ] {
        let platform = app
            .post(
                "/api/api-keys",
                Auth::Session(&session),
                json!({"name": "hook", "webhookUrl": url}),
            )
            .await;
        assert_eq!(platform.status, 400, "{url}: {}", platform.body);
        assert!(
            platform.error().contains("private or reserved"),
            "{}",
            platform.body
        );
        let v1 = app
            .post(
                "/api/v1/api-keys",
                Auth::Session(&session),
                json!({"name": "hook", "webhookUrl": url, "permissions": ["agents:read"]}),
            )
            .await;
        assert_eq!(v1.status, 400, "{url}: {}", v1.body);
        assert_eq!(v1.body["error"]["code"], "VALIDATION_ERROR", "{}", v1.body);
        assert!(
            v1.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("private or reserved")),
            "{}",
            v1.body
        );
    }
    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    assert_eq!(keys.body["keys"], json!([]), "nothing was made");
    // A public literal is fine.
    app.create_key(
        &session,
        json!({"name": "public", "webhookUrl": "http://[2606:4700::1111]/hook"}),
    )
    .await;
}

/// A listener on `ip` that counts the requests it gets and answers `status`.
async fn counting_server(ip: &str, status: u16) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let router = axum::Router::new().fallback(move || {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            axum::http::StatusCode::from_u16(status).expect("status")
        }
    });
    let listener = tokio::net::TcpListener::bind(format!("{ip}:0"))
        .await
        .expect("bind");
    let address = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    (format!("http://{address}"), hits)
}

#[tokio::test]
async fn webhook_deliveries_ignore_proxy_variables() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // A separate server process on the embedded database; the egress rules are the same.
        return;
    }
    // A "proxy" that would see every request sent through it, and a receiver on another
    // loopback address (127.0.0.2) that NO_PROXY does not cover.
    let (proxy, proxied) = counting_server("127.0.0.1", 502).await;
    let (receiver, delivered) = counting_server("127.0.0.2", 200).await;
    let server = ServerProcess::start(|command| {
        command
            .env("CRUCIBLE_WEBHOOK_ALLOW_PRIVATE", "true")
            // The server's own simnet (127.0.0.1) is exempt, as a host would configure it; the
            // webhook client must not use the proxy for anything.
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("no_proxy", "127.0.0.1,localhost");
        for name in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            command.env(name, &proxy);
        }
    })
    .await;
    let cookie = server.signup("proxy@example.com").await;
    let receiver_url = format!("{receiver}/in");
    let key = server
        .v1_key(
            &cookie,
            &["agents:read", "agents:write", "agents:start"],
            Some(&receiver_url),
        )
        .await;
    server
        .start_agent(
            &key,
            json!({"name": "Proxied", "username": "proxied", "class": "fighter", "modelId": "me/x",
                   "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"}, "timeInterval": "5m"}}),
        )
        .await;

    // agent.started reaches the receiver directly, never through the proxy.
    for _ in 0..150 {
        if delivered.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        delivered.load(Ordering::SeqCst) > 0,
        "the webhook was delivered"
    );
    assert_eq!(
        proxied.load(Ordering::SeqCst),
        0,
        "nothing went through the proxy"
    );
}
