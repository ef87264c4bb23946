//! Signed webhooks against a real receiver on a socket: both signatures verify with the secret
//! shown at key creation, failures are retried on the test clock until delivered or
//! dead-lettered, restarts lose nothing, revoked keys get nothing.

use chrono::{DateTime, Duration, Utc};
use crucible::webhooks::{self, Event};
use serde_json::json;

use crate::helpers::webhooks::*;
use crate::helpers::{Auth, TestApp};

#[tokio::test]
async fn a_delivery_is_signed_both_ways_with_the_secret_shown_at_key_creation() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[], "/hooks/crucible").await;
    assert!(hook.secret.starts_with("whsec_"));
    let enqueued_at = app.state.now();

    let data = json!({"agentId": "agt_1", "type": "BUY", "token": "SOL", "amount": 1.25,
                      "price": 151.5, "txHash": null, "note": "naïve ✓ \"quoted\""});
    assert_eq!(
        emit(&app, &hook.account_id, Event::AgentTrade, data.clone()).await,
        1
    );
    let queued = deliveries(&app, &hook.account_id).await;
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].status, "pending");
    assert!(
        hook.receiver.received().is_empty(),
        "queueing sends nothing"
    );

    app.advance(Duration::seconds(3));
    assert_eq!(deliver(&app).await, 1);
    let received = hook.receiver.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.path, "/hooks/crucible");
    let body = verify(request, &hook.secret);
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

    let view = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(request.headers["x-svc-delivery"], view.delivery_id.as_str());
    assert_eq!(view.key_id, hook.key_id);
    assert_eq!(view.url, hook.receiver.url("/hooks/crucible"));
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
    let hook = hooked(&app, &[], "/").await;

    let mut tx = app.state.store.begin().await.expect("begin");
    let queued = webhooks::enqueue(
        &mut tx,
        &hook.account_id,
        crucible::webhooks::Event::AgentStarted,
        json!({"agentId": "a"}),
        app.state.now(),
    )
    .await
    .expect("enqueue");
    assert_eq!(queued, 1);
    tx.rollback().await.expect("rollback");

    assert!(deliveries(&app, &hook.account_id).await.is_empty());
    assert_eq!(deliver(&app).await, 0);
    assert!(hook.receiver.received().is_empty());
}

#[tokio::test]
async fn a_receiver_that_fails_twice_gets_the_event_once_after_the_retries() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[Reply::Status(500), Reply::Status(500)], "/hook").await;
    emit(
        &app,
        &hook.account_id,
        crucible::webhooks::Event::AgentStarted,
        json!({"agentId": "agt_9", "startedAt": "2026-11-23T12:00:00.000Z"}),
    )
    .await;

    assert_eq!(deliver(&app).await, 1);
    let first = &deliveries(&app, &hook.account_id).await[0];
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

    advance_to_next_attempt(&app, &hook.account_id).await;
    assert_eq!(deliver(&app).await, 1);
    assert_eq!(deliveries(&app, &hook.account_id).await[0].attempts, 2);
    advance_to_next_attempt(&app, &hook.account_id).await;
    assert_eq!(deliver(&app).await, 1);

    let done = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(
        (done.status.as_str(), done.attempts, done.last_status_code),
        ("delivered", 3, Some(200))
    );
    app.advance(Duration::hours(2));
    assert_eq!(deliver(&app).await, 0, "delivered exactly once");

    let received = hook.receiver.received();
    assert_eq!(received.len(), 3);
    for request in &received {
        verify(request, &hook.secret);
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
    let hook = hooked(&app, &[Reply::Status(503)], "/hook").await;
    emit(
        &app,
        &hook.account_id,
        Event::AgentStopped,
        json!({"agentId": "agt_2", "stoppedAt": "2026-11-23T13:00:00.000Z"}),
    )
    .await;
    assert_eq!(deliver(&app).await, 1);
    advance_to_next_attempt(&app, &hook.account_id).await;

    let app = app.restart().await;
    assert_eq!(deliver(&app).await, 1);
    let done = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!((done.status.as_str(), done.attempts), ("delivered", 2));
    let received = hook.receiver.received();
    assert_eq!(received.len(), 2);
    assert_eq!(received[0].body, received[1].body);
    assert_eq!(verify(&received[1], &hook.secret)["event"], "agent.stopped");
}

#[tokio::test]
async fn a_lease_held_by_a_dead_worker_is_taken_over_once_it_runs_out() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[], "/hook").await;
    emit_started(&app, &hook.account_id).await;
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
    let done = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!((done.status.as_str(), done.attempts), ("delivered", 2));
    assert_eq!(hook.receiver.received().len(), 1);
}

#[tokio::test]
async fn concurrent_workers_send_each_delivery_once() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[], "/hook").await;
    for n in 0..20 {
        emit(
            &app,
            &hook.account_id,
            Event::AgentTrade,
            json!({"agentId": "a", "n": n}),
        )
        .await;
    }
    let (a, b, c) = tokio::join!(deliver(&app), deliver(&app), deliver(&app));
    assert_eq!(a + b + c, 20);
    let received = hook.receiver.delivery_ids();
    assert_eq!(received.len(), 20);
    let ids: std::collections::BTreeSet<_> = received.iter().collect();
    assert_eq!(ids.len(), 20, "no delivery sent twice");
    assert!(
        deliveries(&app, &hook.account_id)
            .await
            .iter()
            .all(|d| d.status == "delivered")
    );
}

#[tokio::test]
async fn a_day_of_failures_ends_in_the_dead_letter() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[Reply::Status(502); 500], "/down").await;
    // Stored to the millisecond, as every timestamp.
    let created = DateTime::from_timestamp_millis(app.state.now().timestamp_millis()).expect("ms");
    emit(
        &app,
        &hook.account_id,
        Event::AgentPerformance,
        json!({"totalTrades": 3}),
    )
    .await;

    let mut attempts = 0;
    loop {
        attempts += deliver(&app).await;
        let view = &deliveries(&app, &hook.account_id).await[0];
        if view.status == "dead" {
            break;
        }
        assert!(attempts < 500, "gave up eventually");
        advance_to_next_attempt(&app, &hook.account_id).await;
    }
    let dead = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(dead.attempts as usize, attempts);
    assert_eq!(hook.receiver.received().len(), attempts);
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
    let hook = hooked(&app, &[Reply::Status(500)], "/hook").await;
    emit_started(&app, &hook.account_id).await;
    assert_eq!(deliver(&app).await, 1, "a first, failed attempt");

    let revoked = app
        .delete(
            &format!("/api/api-keys/{}", hook.key_id),
            Auth::Session(&hook.session),
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    app.advance(Duration::hours(1));
    assert_eq!(deliver(&app).await, 0);
    let dropped = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(dropped.status, "dead");
    assert!(
        dropped
            .last_error
            .as_deref()
            .expect("reason")
            .contains("revoked"),
        "{dropped:?}"
    );
    assert_eq!(
        hook.receiver.received().len(),
        1,
        "nothing after the revocation"
    );

    assert_eq!(
        emit(
            &app,
            &hook.account_id,
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
    assert_eq!(emit_started(&app, &account_id).await, 1);
    app.advance(Duration::days(1));
    assert_eq!(deliver(&app).await, 0);
    assert_eq!(deliveries(&app, &account_id).await[0].status, "dead");
    assert_eq!(emit_started(&app, &account_id).await, 0);
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

    assert_eq!(emit_started(&app, &plain_id).await, 0);
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
    let hook = hooked(&app, &[], "/first").await;
    let (_, second) = webhook_key(&app, &hook.session, &hook.receiver.url("/second")).await;
    assert_ne!(hook.secret, second);

    assert_eq!(
        emit(
            &app,
            &hook.account_id,
            Event::AgentTrade,
            json!({"agentId": "a", "amount": 2})
        )
        .await,
        2
    );
    assert_eq!(deliver(&app).await, 2);
    let received = hook.receiver.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        let (own, other) = match request.path.as_str() {
            "/first" => (&hook.secret, &second),
            "/second" => (&second, &hook.secret),
            path => panic!("unexpected path {path}"),
        };
        verify(request, own);
        assert!(verify_fails_with(request, other));
    }
    assert_ne!(
        received[0].headers["x-svc-delivery"],
        received[1].headers["x-svc-delivery"]
    );
    assert_eq!(deliveries(&app, &hook.account_id).await.len(), 2);
}

#[tokio::test]
async fn a_slow_receiver_times_out_and_is_retried() {
    let app = TestApp::spawn_with(|config| config.webhook_timeout_ms = 200).await;
    let hook = hooked(
        &app,
        &[Reply::Slow(std::time::Duration::from_secs(5))],
        "/slow",
    )
    .await;
    emit_started(&app, &hook.account_id).await;

    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &hook.account_id).await[0];
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
    advance_to_next_attempt(&app, &hook.account_id).await;
    assert_eq!(deliver(&app).await, 1);
    assert_eq!(
        deliveries(&app, &hook.account_id).await[0].status,
        "delivered"
    );
}

#[tokio::test]
async fn redirects_are_not_followed_and_unreachable_receivers_are_retried() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[Reply::RedirectTo("/elsewhere")], "/moved").await;
    emit_started(&app, &hook.account_id).await;
    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(
        (view.status.as_str(), view.last_status_code),
        ("pending", Some(307))
    );
    assert_eq!(
        hook.receiver.received().len(),
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
    assert_eq!(
        (view.last_error.as_deref(), view.error_category.as_deref()),
        (
            Some("could not connect to the receiver"),
            Some("connection")
        ),
        "{view:?}"
    );
}

#[tokio::test]
async fn the_server_delivers_in_the_background_when_its_scheduler_runs() {
    let app = TestApp::spawn_with(|config| config.scheduler_interval_ms = 50).await;
    let hook = hooked(&app, &[], "/bg").await;
    emit_started(&app, &hook.account_id).await;
    for _ in 0..200 {
        if !hook.receiver.received().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let received = hook.receiver.received();
    assert_eq!(
        received.len(),
        1,
        "the worker delivered it without being called"
    );
    verify(&received[0], &hook.secret);
}
