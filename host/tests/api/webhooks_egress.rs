//! Webhook egress: by default a key owner cannot make the server POST into its own network —
//! neither with an IP literal nor with a name that resolves to a private address.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    for host in ["127.0.0.1", "localhost"] {
        app.create_key(
            &session,
            json!({"name": host, "webhookUrl": format!("http://{host}:{port}/hook")}),
        )
        .await;
    }
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
    assert_eq!(queued, 2);

    crucible::webhooks::deliver_due(&app.state)
        .await
        .expect("deliver");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "nothing reached the private receiver"
    );
    let deliveries = crucible::webhooks::recent_deliveries(&app.state, &account_id.0, 10)
        .await
        .expect("deliveries");
    assert_eq!(deliveries.len(), 2);
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
    crucible::webhooks::deliver_due(&app.state)
        .await
        .expect("deliver");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
