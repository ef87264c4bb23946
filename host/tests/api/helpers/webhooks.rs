//! The webhook tests' harness: a real receiver on its own port that answers from a script, the
//! checks a receiver makes on a delivery, and the calls that queue and deliver events.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::TestApp;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use crucible::webhooks::{self, DeliveryView, Event};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// What the receiver answers to one request.
#[derive(Clone, Copy)]
pub enum Reply {
    Status(u16),
    RedirectTo(&'static str),
    /// Answer 200, but only after this long.
    Slow(std::time::Duration),
}

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A webhook receiver on its own port: answers from a script (then 200) and keeps every request.
#[derive(Clone, Default)]
pub struct Receiver {
    script: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
    /// Requests being answered now, and the most there ever were at once.
    at_once: Arc<std::sync::atomic::AtomicUsize>,
    most_at_once: Arc<std::sync::atomic::AtomicUsize>,
    base: String,
}

impl Receiver {
    pub async fn start(script: &[Reply]) -> Receiver {
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

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }

    /// The most requests it was answering at once.
    pub fn most_at_once(&self) -> usize {
        self.most_at_once.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The delivery id (`X-Svc-Delivery`) of every request received, in arrival order.
    pub fn delivery_ids(&self) -> Vec<String> {
        self.received()
            .iter()
            .map(|request| {
                request.headers["x-svc-delivery"]
                    .to_str()
                    .expect("id")
                    .to_owned()
            })
            .collect()
    }
}

pub async fn receive(
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
    let now = receiver
        .at_once
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        + 1;
    receiver
        .most_at_once
        .fetch_max(now, std::sync::atomic::Ordering::SeqCst);
    let response = match reply.unwrap_or(Reply::Status(200)) {
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
    };
    receiver
        .at_once
        .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    response
}

pub fn hmac_hex(secret: &str, message: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(message);
    hex::encode(mac.finalize().into_bytes())
}

/// Check a request as a receiver would, both ways: the header over the raw body, and the
/// `signature` member over `{event, timestamp, data}`. The parsed body when both hold.
pub fn check(request: &Received, secret: &str) -> Result<Value, String> {
    // The first line is the original form, which receivers reading one value still get.
    let header = request.headers["x-svc-signature"]
        .to_str()
        .map_err(|e| e.to_string())?;
    if header != format!("sha256={}", hmac_hex(secret, &request.body)) {
        return Err("the header does not sign the raw body".into());
    }
    check_timestamped(request, secret)?;
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

/// The `t=<unix>,v1=<hex>` line: the HMAC of `<t>.<body>`. Returns `t`.
pub fn check_timestamped(request: &Received, secret: &str) -> Result<i64, String> {
    let line = request
        .headers
        .get_all("x-svc-signature")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("t="))
        .ok_or("no timestamped signature")?;
    let mut t = None;
    let mut v1 = None;
    for part in line.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1 = Some(value.to_owned()),
            _ => {}
        }
    }
    let (t, v1) = t.zip(v1).ok_or("the timestamped signature lacks t or v1")?;
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(&request.body);
    if v1 != hmac_hex(secret, &signed) {
        return Err("v1 does not sign `<t>.<body>`".into());
    }
    Ok(t)
}

pub fn verify(request: &Received, secret: &str) -> Value {
    check(request, secret).unwrap_or_else(|problem| panic!("{problem}: {request:?}"))
}

pub fn verify_fails_with(request: &Received, secret: &str) -> bool {
    check(request, secret).is_err()
}

/// An account with a session; its id.
pub async fn account(app: &TestApp, email: &str) -> (String, String) {
    let response = app.signup(email).await;
    assert_eq!(response.status, 201, "{}", response.body);
    let id = response.body["id"].as_str().expect("id").to_owned();
    (id, response.session_token())
}

/// A key with a webhook URL: (key id, webhook secret).
pub async fn webhook_key(app: &TestApp, session: &str, url: &str) -> (String, String) {
    let key = app
        .create_key(session, json!({"name": "hooked", "webhookUrl": url}))
        .await;
    let secret = key["webhookSecret"]
        .as_str()
        .expect("webhookSecret")
        .to_owned();
    (key["keyId"].as_str().expect("keyId").to_owned(), secret)
}

/// An account whose one webhook key points at a fresh receiver answering `script`.
pub struct Hooked {
    /// Keep it bound for the whole test: dropping it stops the receiver.
    pub receiver: Receiver,
    pub account_id: String,
    pub session: String,
    pub key_id: String,
    pub secret: String,
}

/// Sign `ann@example.com` up and give the account a webhook key for `path` on a new receiver.
pub async fn hooked(app: &TestApp, script: &[Reply], path: &str) -> Hooked {
    let receiver = Receiver::start(script).await;
    let (account_id, session) = account(app, "ann@example.com").await;
    let (key_id, secret) = webhook_key(app, &session, &receiver.url(path)).await;
    Hooked {
        receiver,
        account_id,
        session,
        key_id,
        secret,
    }
}

/// Queue one `agent.started` for the account, the event most delivery tests send.
pub async fn emit_started(app: &TestApp, account_id: &str) -> u64 {
    emit(
        app,
        account_id,
        Event::AgentStarted,
        json!({"agentId": "a"}),
    )
    .await
}

/// Enqueue in a transaction of the app's store, committed, as a producer would.
pub async fn emit(app: &TestApp, account_id: &str, event: Event, data: Value) -> u64 {
    let mut tx = app.state.store.begin().await.expect("begin");
    let queued = webhooks::enqueue(&mut tx, account_id, event, data, app.state.now())
        .await
        .expect("enqueue");
    tx.commit().await.expect("commit");
    queued
}

pub async fn deliver(app: &TestApp) -> usize {
    webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver")
}

pub async fn deliveries(app: &TestApp, account_id: &str) -> Vec<DeliveryView> {
    webhooks::recent_deliveries(&app.state.store, account_id, 50)
        .await
        .expect("list")
}

/// Move the clock to the only pending delivery's next attempt.
pub async fn advance_to_next_attempt(app: &TestApp, account_id: &str) {
    let pending = deliveries(app, account_id).await;
    let next = pending[0].next_attempt_at.as_deref().expect("pending");
    let next: DateTime<Utc> = next.parse().expect("rfc3339");
    assert!(next > app.state.now(), "a retry waits");
    app.clock.set(next);
}
