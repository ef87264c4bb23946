//! Signed webhooks (SPEC §6.2, DESIGN §9) against a real receiver on a socket: both signatures
//! verify with the secret shown at key creation, failures are retried on the test clock until
//! delivered or dead-lettered, restarts lose nothing, revoked keys get nothing.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::helpers::{Auth, TestApp};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use crucible::webhooks::{self, DeliveryView, Event};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// What the receiver answers to one request.
#[derive(Clone, Copy)]
enum Reply {
    Status(u16),
    RedirectTo(&'static str),
    /// Answer 200, but only after this long.
    Slow(std::time::Duration),
}

#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Bytes,
}

/// A webhook receiver on its own port: answers from a script (then 200) and keeps every request.
#[derive(Clone, Default)]
struct Receiver {
    script: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
    base: String,
}

impl Receiver {
    async fn start(script: &[Reply]) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let mut receiver = Receiver {
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
            ..Receiver::default()
        };
        receiver.base = format!("http://{}", listener.local_addr().expect("addr"));
        let router = axum::Router::new()
            .fallback(receive)
            .with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.expect("receiver") });
        receiver
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

async fn receive(
    State(receiver): State<Receiver>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    receiver.received.lock().expect("lock").push(Received {
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let reply = receiver.script.lock().expect("lock").pop_front();
    match reply.unwrap_or(Reply::Status(200)) {
        Reply::Status(code) => (
            StatusCode::from_u16(code).expect("status"),
            "receiver says so",
        )
            .into_response(),
        Reply::RedirectTo(location) => (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, location)],
        )
            .into_response(),
        Reply::Slow(delay) => {
            tokio::time::sleep(delay).await;
            StatusCode::OK.into_response()
        }
    }
}

fn hmac_hex(secret: &str, message: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(message);
    hex::encode(mac.finalize().into_bytes())
}

/// Check a request as a receiver would, both ways: the header over the raw body, and the
/// `signature` member over `{event, timestamp, data}`. The parsed body when both hold.
fn check(request: &Received, secret: &str) -> Result<Value, String> {
    let header = request.headers["x-svc-signature"]
        .to_str()
        .map_err(|e| e.to_string())?;
    if header != format!("sha256={}", hmac_hex(secret, &request.body)) {
        return Err("the header does not sign the raw body".into());
    }
    let body: Value = serde_json::from_slice(&request.body).map_err(|e| e.to_string())?;
    let signature = body["signature"].as_str().ok_or("no signature member")?;
    // Way 1: re-serialise {event, timestamp, data} compactly, in that order.
    let reserialised = format!(
        r#"{{"event":{},"timestamp":{},"data":{}}}"#,
        body["event"], body["timestamp"], body["data"]
    );
    if signature != hmac_hex(secret, reserialised.as_bytes()) {
        return Err("the signature member does not sign {event, timestamp, data}".into());
    }
    // Way 2: the raw body without its last member is exactly what was signed.
    let raw = std::str::from_utf8(&request.body).map_err(|e| e.to_string())?;
    let cut = raw
        .rfind(",\"signature\":")
        .ok_or("signature is not the last member")?;
    if format!("{}}}", &raw[..cut]) != reserialised {
        return Err("the body minus its signature is not the signed payload".into());
    }
    Ok(body)
}

fn verify(request: &Received, secret: &str) -> Value {
    check(request, secret).unwrap_or_else(|problem| panic!("{problem}: {request:?}"))
}

fn verify_fails_with(request: &Received, secret: &str) -> bool {
    check(request, secret).is_err()
}

/// An account with a session; its id.
async fn account(app: &TestApp, email: &str) -> (String, String) {
    let response = app.signup(email).await;
    assert_eq!(response.status, 201, "{}", response.body);
    let id = response.body["id"].as_str().expect("id").to_owned();
    (id, response.session_token())
}

/// A key with a webhook URL: (key id, webhook secret).
async fn webhook_key(app: &TestApp, session: &str, url: &str) -> (String, String) {
    let key = app
        .create_key(session, json!({"name": "hooked", "webhookUrl": url}))
        .await;
    let secret = key["webhookSecret"]
        .as_str()
        .expect("webhookSecret")
        .to_owned();
    (key["keyId"].as_str().expect("keyId").to_owned(), secret)
}

/// Enqueue in a transaction of the app's store, committed, as a producer would.
async fn emit(app: &TestApp, account_id: &str, event: Event, data: Value) -> u64 {
    let mut tx = app.state.store.begin().await.expect("begin");
    let queued = webhooks::enqueue(&mut tx, account_id, event, data, app.state.now())
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    queued
}

async fn deliver(app: &TestApp) -> usize {
    webhooks::deliver_due(&app.state).await.expect("deliver")
}

async fn deliveries(app: &TestApp, account_id: &str) -> Vec<DeliveryView> {
    webhooks::recent_deliveries(&app.state, account_id, 50)
        .await
        .expect("list")
}

/// Move the clock to the only pending delivery's next attempt.
async fn advance_to_next_attempt(app: &TestApp, account_id: &str) {
    let pending = deliveries(app, account_id).await;
    let next = pending[0].next_attempt_at.as_deref().expect("pending");
    let next: DateTime<Utc> = next.parse().expect("rfc3339");
    assert!(next > app.state.now(), "a retry waits");
    app.clock.set(next);
}

#[tokio::test]
async fn a_delivery_is_signed_both_ways_with_the_secret_shown_at_key_creation() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    let (key_id, secret) = webhook_key(&app, &session, &receiver.url("/hooks/crucible")).await;
    assert!(secret.starts_with("whsec_"));
    let enqueued_at = app.state.now();

    let data = json!({"agentId": "agt_1", "type": "BUY", "token": "SOL", "amount": 1.25,
                      "price": 151.5, "txHash": null, "note": "naïve ✓ \"quoted\""});
    assert_eq!(
        emit(&app, &account_id, Event::AgentTrade, data.clone()).await,
        1
    );
    let queued = deliveries(&app, &account_id).await;
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].status, "pending");
    assert!(receiver.received().is_empty(), "queueing sends nothing");

    app.advance(Duration::seconds(3));
    assert_eq!(deliver(&app).await, 1);
    let received = receiver.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.path, "/hooks/crucible");
    let body = verify(request, &secret);
    assert_eq!(body["event"], "agent.trade");
    assert_eq!(body["data"], data);
    let timestamp: DateTime<Utc> = body["timestamp"]
        .as_str()
        .expect("ts")
        .parse()
        .expect("rfc3339");
    assert_eq!(
        timestamp.timestamp_millis(),
        enqueued_at.timestamp_millis(),
        "the enqueue time"
    );
    assert!(body["timestamp"].as_str().expect("ts").ends_with('Z'));
    assert_eq!(request.headers["content-type"], "application/json");
    assert!(
        request.headers["user-agent"]
            .to_str()
            .expect("ua")
            .starts_with("Crucible-Webhooks/")
    );
    assert_eq!(request.headers["x-svc-event"], "agent.trade");
    assert!(verify_fails_with(request, "whsec_wrong"));

    let view = &deliveries(&app, &account_id).await[0];
    assert_eq!(request.headers["x-svc-delivery"], view.delivery_id.as_str());
    assert_eq!(view.key_id, key_id);
    assert_eq!(view.url, receiver.url("/hooks/crucible"));
    assert_eq!(
        (view.status.as_str(), view.attempts, view.last_status_code),
        ("delivered", 1, Some(200))
    );
    assert!(
        view.delivered_at.is_some() && view.next_attempt_at.is_none() && view.last_error.is_none()
    );
    assert_eq!(deliver(&app).await, 0, "delivered once");
}

#[tokio::test]
async fn an_event_exists_only_if_its_transaction_commits() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    webhook_key(&app, &session, &receiver.url("/")).await;

    let mut tx = app.state.store.begin().await.expect("begin");
    let queued = webhooks::enqueue(
        &mut tx,
        &account_id,
        crucible::webhooks::Event::AgentStarted,
        json!({"agentId": "a"}),
        app.state.now(),
    )
    .await
    .expect("enqueue");
    assert_eq!(queued, 1);
    tx.rollback().await.expect("rollback");

    assert!(deliveries(&app, &account_id).await.is_empty());
    assert_eq!(deliver(&app).await, 0);
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn a_receiver_that_fails_twice_gets_the_event_once_after_the_retries() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[Reply::Status(500), Reply::Status(500)]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    let (_, secret) = webhook_key(&app, &session, &receiver.url("/hook")).await;
    emit(
        &app,
        &account_id,
        crucible::webhooks::Event::AgentStarted,
        json!({"agentId": "agt_9", "startedAt": "2026-11-23T12:00:00.000Z"}),
    )
    .await;

    assert_eq!(deliver(&app).await, 1);
    let first = &deliveries(&app, &account_id).await[0];
    assert_eq!(
        (
            first.status.as_str(),
            first.attempts,
            first.last_status_code
        ),
        ("pending", 1, Some(500))
    );
    assert!(
        first.last_error.as_deref().expect("error").contains("500"),
        "{first:?}"
    );
    assert_eq!(deliver(&app).await, 0, "not again before the backoff");

    advance_to_next_attempt(&app, &account_id).await;
    assert_eq!(deliver(&app).await, 1);
    assert_eq!(deliveries(&app, &account_id).await[0].attempts, 2);
    advance_to_next_attempt(&app, &account_id).await;
    assert_eq!(deliver(&app).await, 1);

    let done = &deliveries(&app, &account_id).await[0];
    assert_eq!(
        (done.status.as_str(), done.attempts, done.last_status_code),
        ("delivered", 3, Some(200))
    );
    app.advance(Duration::hours(2));
    assert_eq!(deliver(&app).await, 0, "delivered exactly once");

    let received = receiver.received();
    assert_eq!(received.len(), 3);
    for request in &received {
        verify(request, &secret);
        assert_eq!(
            request.body, received[0].body,
            "every retry sends the same bytes"
        );
        assert_eq!(request.headers["x-svc-delivery"], done.delivery_id.as_str());
    }
}

#[tokio::test]
async fn a_restart_in_the_middle_of_the_retries_loses_no_event() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[Reply::Status(503)]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    let (_, secret) = webhook_key(&app, &session, &receiver.url("/hook")).await;
    emit(
        &app,
        &account_id,
        Event::AgentStopped,
        json!({"agentId": "agt_2", "stoppedAt": "2026-11-23T13:00:00.000Z"}),
    )
    .await;
    assert_eq!(deliver(&app).await, 1);
    advance_to_next_attempt(&app, &account_id).await;

    let app = app.restart().await;
    assert_eq!(deliver(&app).await, 1);
    let done = &deliveries(&app, &account_id).await[0];
    assert_eq!((done.status.as_str(), done.attempts), ("delivered", 2));
    let received = receiver.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body, received[1].body);
    assert_eq!(verify(&received[1], &secret)["event"], "agent.stopped");
}

#[tokio::test]
async fn a_lease_held_by_a_dead_worker_is_taken_over_once_it_runs_out() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    webhook_key(&app, &session, &receiver.url("/hook")).await;
    emit(
        &app,
        &account_id,
        Event::AgentStarted,
        json!({"agentId": "a"}),
    )
    .await;
    // Another node leased the row and died before recording anything.
    sqlx::query(
        "UPDATE webhook_deliveries SET lease_owner = 'whw_dead', lease_until = $1, attempts = 1",
    )
    .bind((app.state.now() + Duration::seconds(50)).timestamp_millis())
    .execute(app.state.store.write())
    .await
    .expect("lease");

    assert_eq!(deliver(&app).await, 0, "the lease still holds");
    app.advance(Duration::seconds(50));
    assert_eq!(deliver(&app).await, 1, "taken over");
    let done = &deliveries(&app, &account_id).await[0];
    assert_eq!((done.status.as_str(), done.attempts), ("delivered", 2));
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn concurrent_workers_send_each_delivery_once() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    webhook_key(&app, &session, &receiver.url("/hook")).await;
    for n in 0..20 {
        emit(
            &app,
            &account_id,
            Event::AgentTrade,
            json!({"agentId": "a", "n": n}),
        )
        .await;
    }
    let (a, b, c) = tokio::join!(deliver(&app), deliver(&app), deliver(&app));
    assert_eq!(a + b + c, 20);
    let received = receiver.received();
    assert_eq!(received.len(), 20);
    let ids: std::collections::BTreeSet<_> = received
        .iter()
        .map(|r| r.headers["x-svc-delivery"].to_str().expect("id").to_owned())
        .collect();
    assert_eq!(ids.len(), 20, "no delivery sent twice");
    assert!(
        deliveries(&app, &account_id)
            .await
            .iter()
            .all(|d| d.status == "delivered")
    );
}

#[tokio::test]
async fn a_day_of_failures_ends_in_the_dead_letter() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[Reply::Status(502); 500]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    webhook_key(&app, &session, &receiver.url("/down")).await;
    // Stored to the millisecond, as every timestamp.
    let created = DateTime::from_timestamp_millis(app.state.now().timestamp_millis()).expect("ms");
    emit(
        &app,
        &account_id,
        Event::AgentPerformance,
        json!({"totalTrades": 3}),
    )
    .await;

    let mut attempts = 0;
    loop {
        attempts += deliver(&app).await;
        let view = &deliveries(&app, &account_id).await[0];
        if view.status == "dead" {
            break;
        }
        assert!(attempts < 500, "gave up eventually");
        advance_to_next_attempt(&app, &account_id).await;
    }
    let dead = &deliveries(&app, &account_id).await[0];
    assert_eq!(dead.attempts as usize, attempts);
    assert_eq!(receiver.received().len(), attempts);
    assert!(attempts >= 10, "retried through the day: {attempts}");
    assert_eq!(dead.last_status_code, Some(502));
    assert!(dead.next_attempt_at.is_none() && dead.delivered_at.is_none());
    let last: DateTime<Utc> = dead
        .last_attempt_at
        .as_deref()
        .expect("last")
        .parse()
        .expect("ts");
    assert_eq!(
        last - created,
        Duration::hours(24),
        "the last try lands on the 24 h mark"
    );

    app.advance(Duration::days(2));
    assert_eq!(deliver(&app).await, 0, "dead stays dead");
}

#[tokio::test]
async fn a_revoked_key_gets_nothing() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[Reply::Status(500)]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    let (key_id, _) = webhook_key(&app, &session, &receiver.url("/hook")).await;
    emit(
        &app,
        &account_id,
        Event::AgentStarted,
        json!({"agentId": "a"}),
    )
    .await;
    assert_eq!(deliver(&app).await, 1, "a first, failed attempt");

    let revoked = app
        .delete(&format!("/api/api-keys/{key_id}"), Auth::Session(&session))
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    app.advance(Duration::hours(1));
    assert_eq!(deliver(&app).await, 0);
    let dropped = &deliveries(&app, &account_id).await[0];
    assert_eq!(dropped.status, "dead");
    assert!(
        dropped
            .last_error
            .as_deref()
            .expect("reason")
            .contains("revoked"),
        "{dropped:?}"
    );
    assert_eq!(receiver.received().len(), 1, "nothing after the revocation");

    assert_eq!(
        emit(
            &app,
            &account_id,
            Event::AgentStopped,
            json!({"agentId": "a"})
        )
        .await,
        0
    );
}

#[tokio::test]
async fn an_expired_key_is_not_queued_and_its_pending_deliveries_are_dropped() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    app.create_key(
        &session,
        json!({"name": "short", "expiresInDays": 1, "webhookUrl": receiver.url("/")}),
    )
    .await;
    assert_eq!(
        emit(
            &app,
            &account_id,
            Event::AgentStarted,
            json!({"agentId": "a"})
        )
        .await,
        1
    );
    app.advance(Duration::days(1));
    assert_eq!(deliver(&app).await, 0);
    assert_eq!(deliveries(&app, &account_id).await[0].status, "dead");
    assert_eq!(
        emit(
            &app,
            &account_id,
            Event::AgentStarted,
            json!({"agentId": "a"})
        )
        .await,
        0
    );
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn accounts_without_webhook_keys_queue_nothing_and_accounts_are_kept_apart() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (plain_id, plain_session) = account(&app, "plain@example.com").await;
    app.create_key(&plain_session, json!({"name": "no hook"}))
        .await;
    let (other_id, other_session) = account(&app, "other@example.com").await;
    webhook_key(&app, &other_session, &receiver.url("/other")).await;

    assert_eq!(
        emit(
            &app,
            &plain_id,
            Event::AgentStarted,
            json!({"agentId": "a"})
        )
        .await,
        0
    );
    assert!(deliveries(&app, &plain_id).await.is_empty());
    assert!(
        deliveries(&app, &other_id).await.is_empty(),
        "another account's event is not theirs"
    );
    assert_eq!(deliver(&app).await, 0);
    assert!(receiver.received().is_empty());
}

#[tokio::test]
async fn two_webhook_keys_get_one_delivery_each_signed_with_their_own_secret() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    let (_, first) = webhook_key(&app, &session, &receiver.url("/first")).await;
    let (_, second) = webhook_key(&app, &session, &receiver.url("/second")).await;
    assert_ne!(first, second);

    assert_eq!(
        emit(
            &app,
            &account_id,
            Event::AgentTrade,
            json!({"agentId": "a", "amount": 2})
        )
        .await,
        2
    );
    assert_eq!(deliver(&app).await, 2);
    let received = receiver.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        let (own, other) = match request.path.as_str() {
            "/first" => (&first, &second),
            "/second" => (&second, &first),
            path => panic!("unexpected path {path}"),
        };
        verify(request, own);
        assert!(verify_fails_with(request, other));
    }
    assert_ne!(
        received[0].headers["x-svc-delivery"],
        received[1].headers["x-svc-delivery"]
    );
    assert_eq!(deliveries(&app, &account_id).await.len(), 2);
}

#[tokio::test]
async fn a_slow_receiver_times_out_and_is_retried() {
    let app = TestApp::spawn_with(|config| config.webhook_timeout_ms = 200).await;
    let receiver = Receiver::start(&[Reply::Slow(std::time::Duration::from_secs(5))]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    webhook_key(&app, &session, &receiver.url("/slow")).await;
    emit(
        &app,
        &account_id,
        Event::AgentStarted,
        json!({"agentId": "a"}),
    )
    .await;

    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &account_id).await[0];
    assert_eq!(
        (view.status.as_str(), view.last_status_code),
        ("pending", None)
    );
    assert!(
        view.last_error
            .as_deref()
            .expect("error")
            .contains("no response within 200 ms"),
        "{view:?}"
    );
    advance_to_next_attempt(&app, &account_id).await;
    assert_eq!(deliver(&app).await, 1);
    assert_eq!(deliveries(&app, &account_id).await[0].status, "delivered");
}

#[tokio::test]
async fn redirects_are_not_followed_and_unreachable_receivers_are_retried() {
    let app = TestApp::spawn().await;
    let receiver = Receiver::start(&[Reply::RedirectTo("/elsewhere")]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    webhook_key(&app, &session, &receiver.url("/moved")).await;
    emit(
        &app,
        &account_id,
        Event::AgentStarted,
        json!({"agentId": "a"}),
    )
    .await;
    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &account_id).await[0];
    assert_eq!(
        (view.status.as_str(), view.last_status_code),
        ("pending", Some(307))
    );
    assert_eq!(
        receiver.received().len(),
        1,
        "the redirect was not followed"
    );

    // A port nobody listens on: a connection error, recorded and retried.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/gone", closed.local_addr().expect("addr"));
    drop(closed);
    let (other_id, other_session) = account(&app, "bob@example.com").await;
    webhook_key(&app, &other_session, &url).await;
    emit(
        &app,
        &other_id,
        Event::AgentStarted,
        json!({"agentId": "b"}),
    )
    .await;
    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &other_id).await[0];
    assert_eq!(
        (view.status.as_str(), view.last_status_code),
        ("pending", None)
    );
    assert!(
        view.last_error
            .as_deref()
            .expect("error")
            .starts_with("connection failed"),
        "{view:?}"
    );
}

#[tokio::test]
async fn the_server_delivers_in_the_background_when_its_scheduler_runs() {
    let app = TestApp::spawn_with(|config| config.scheduler_interval_ms = 50).await;
    let receiver = Receiver::start(&[]).await;
    let (account_id, session) = account(&app, "ann@example.com").await;
    let (_, secret) = webhook_key(&app, &session, &receiver.url("/bg")).await;
    emit(
        &app,
        &account_id,
        Event::AgentStarted,
        json!({"agentId": "a"}),
    )
    .await;
    for _ in 0..200 {
        if !receiver.received().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let received = receiver.received();
    assert_eq!(
        received.len(),
        1,
        "the worker delivered it without being called"
    );
    verify(&received[0], &secret);
}
