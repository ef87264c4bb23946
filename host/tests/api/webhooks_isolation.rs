//! One tenant's receiver cannot hurt another's deliveries, and what the deliveries API tells an
//! owner about a failure is ours to say: a category and a short sentence, never the receiver's
//! body. Every attempt carries a fresh timestamped signature, so receivers can refuse replays.

use std::time::Duration as StdDuration;

use chrono::Duration;
use crucible::webhooks::Event;
use serde_json::json;

use crate::helpers::TestApp;
use crate::helpers::webhooks::*;

#[tokio::test]
async fn a_hanging_receiver_holds_its_own_slots_and_no_one_elses() {
    let app = TestApp::spawn_with(|config| config.webhook_timeout_ms = 2_000).await;
    let hanging = Receiver::start(&[Reply::Slow(StdDuration::from_secs(10)); 8]).await;
    let prompt = Receiver::start(&[]).await;
    let (slow_account, slow_session) = account(&app, "slow@example.com").await;
    webhook_key(&app, &slow_session, &hanging.url("/hook")).await;
    let (fast_account, fast_session) = account(&app, "fast@example.com").await;
    let (_, fast_secret) = webhook_key(&app, &fast_session, &prompt.url("/hook")).await;
    // The hanging receiver's eight events are due first.
    for n in 0..8 {
        emit(&app, &slow_account, Event::AgentTrade, json!({"n": n})).await;
    }
    app.advance(Duration::milliseconds(1));
    emit_started(&app, &fast_account).await;

    let worker = {
        let state = app.state.clone();
        tokio::spawn(async move { crucible::webhooks::deliver_due(&state.delivering()).await })
    };
    let mut waited = 0;
    while prompt.received().is_empty() && waited < 1_500 {
        tokio::time::sleep(StdDuration::from_millis(20)).await;
        waited += 20;
    }
    assert_eq!(prompt.received().len(), 1, "the prompt receiver was served");
    verify(&prompt.received()[0], &fast_secret);
    assert!(
        !worker.is_finished(),
        "served while the hanging requests were still in flight"
    );
    assert!(
        hanging.received().len() <= crucible::webhooks::concurrency::INITIAL,
        "at most {} requests at once to one destination, got {}",
        crucible::webhooks::concurrency::INITIAL,
        hanging.received().len()
    );
    let sent = worker.await.expect("join").expect("deliver");
    assert_eq!(sent, 9, "every due row was attempted in the pass");
    let slow = deliveries(&app, &slow_account).await;
    assert!(
        slow.iter()
            .all(|d| d.status == "pending" && d.error_category.as_deref() == Some("timeout")),
        "{slow:?}"
    );
}

/// A receiver that keeps up is sent more at once than one the worker has not heard from, a
/// request more each round trip (`webhooks::concurrency`), and never more than the most.
#[tokio::test]
async fn a_receiver_that_keeps_up_is_sent_more_at_once() {
    let app = TestApp::spawn().await;
    const QUEUED: usize = 600;
    let receiver = Receiver::start(&[Reply::Slow(StdDuration::from_millis(10)); QUEUED]).await;
    let (account_id, session) = account(&app, "busy@example.com").await;
    webhook_key(&app, &session, &receiver.url("/hook")).await;
    for n in 0..QUEUED {
        emit(&app, &account_id, Event::AgentTrade, json!({"n": n})).await;
    }
    let sent = crucible::webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver");
    assert_eq!(sent, QUEUED);
    assert_eq!(receiver.received().len(), QUEUED, "each row sent once");
    let most = receiver.most_at_once();
    assert!(
        most > crucible::webhooks::concurrency::INITIAL
            && most <= crucible::webhooks::concurrency::MAX,
        "the receiver answered up to {most} requests at once"
    );
}

#[tokio::test]
async fn rows_waiting_in_a_worker_for_a_slot_keep_their_lease_and_no_other_worker_sends_them() {
    // Leases run 2 × 4 s + 30 s = 38 s; the worker renews what it holds every 2 s.
    let app = TestApp::spawn_with(|config| config.webhook_timeout_ms = 4_000).await;
    let hanging = Receiver::start(&[Reply::Slow(StdDuration::from_secs(30)); 40]).await;
    let (account_id, session) = account(&app, "slow@example.com").await;
    webhook_key(&app, &session, &hanging.url("/hook")).await;
    let queued = crucible::webhooks::concurrency::INITIAL + 4;
    for n in 0..queued {
        emit(&app, &account_id, Event::AgentTrade, json!({"n": n})).await;
    }
    let first = {
        let state = app.state.clone();
        tokio::spawn(async move { crucible::webhooks::deliver_due(&state.delivering()).await })
    };
    // Its destination's slots fill, the rest wait in the worker; then 20 s pass, the worker
    // renews, and 20 s more: past the leases the claim took, within the renewed ones.
    tokio::time::sleep(StdDuration::from_millis(300)).await;
    assert_eq!(
        hanging.received().len(),
        crucible::webhooks::concurrency::INITIAL
    );
    app.advance(Duration::seconds(20));
    tokio::time::sleep(StdDuration::from_millis(2_400)).await;
    app.advance(Duration::seconds(20));
    let second = crucible::webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver");
    assert_eq!(
        second, 0,
        "nothing the first worker holds was claimed again"
    );
    assert_eq!(
        hanging.received().len(),
        crucible::webhooks::concurrency::INITIAL,
        "no row was sent twice"
    );
    first.abort();
}

/// A backlog several claims deep for two receivers: the worker claims again while earlier rows
/// wait for slots and are in flight, and still every row is sent once and recorded as delivered.
#[tokio::test]
async fn a_backlog_several_claims_deep_is_sent_once_a_row_and_recorded() {
    let app = TestApp::spawn().await;
    // More rows of each URL than one claim takes of a URL (256).
    const QUEUED: usize = 700;
    let mut receivers = Vec::new();
    for email in ["one@example.com", "two@example.com"] {
        let receiver = Receiver::start(&[]).await;
        let (account_id, session) = account(&app, email).await;
        webhook_key(&app, &session, &receiver.url("/hook")).await;
        let mut tx = app.state.store.begin().await.expect("begin");
        for n in 0..QUEUED {
            let queued = crucible::webhooks::enqueue(
                &mut tx,
                &account_id,
                Event::AgentTrade,
                json!({ "n": n }),
                app.state.now(),
            )
            .await
            .expect("enqueue");
            assert_eq!(queued, 1);
        }
        tx.commit().await.expect("commit");
        receivers.push(receiver);
    }

    let sent = crucible::webhooks::deliver_due(&app.state.delivering())
        .await
        .expect("deliver");
    assert_eq!(sent, 2 * QUEUED, "one pass sends the whole backlog");
    for receiver in &receivers {
        let ids = receiver.delivery_ids();
        assert_eq!(ids.len(), QUEUED, "each row sent once");
        let distinct: std::collections::HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), QUEUED, "no row sent twice");
    }
    let (undelivered,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'delivered'")
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
    assert_eq!(undelivered, 0, "every outcome recorded");
    assert_eq!(deliver(&app).await, 0, "nothing left to send");
}

#[tokio::test]
async fn an_owner_sees_a_category_and_a_short_reason_never_the_receivers_body() {
    let app = TestApp::spawn().await;
    let hook = hooked(
        &app,
        &[Reply::Status(500), Reply::RedirectTo("http://example.com/")],
        "/hook",
    )
    .await;
    emit_started(&app, &hook.account_id).await;

    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(
        (view.last_error.as_deref(), view.error_category.as_deref()),
        (Some("HTTP 500 Internal Server Error"), Some("http_status"))
    );
    advance_to_next_attempt(&app, &hook.account_id).await;
    assert_eq!(deliver(&app).await, 1);
    let view = &deliveries(&app, &hook.account_id).await[0];
    assert_eq!(view.error_category.as_deref(), Some("redirect"));
    let shown = serde_json::to_string(view).expect("json");
    assert!(
        !shown.contains("receiver says so"),
        "the receiver's body never reaches the API: {shown}"
    );
}

#[tokio::test]
async fn every_attempt_is_signed_with_the_time_it_was_sent() {
    let app = TestApp::spawn().await;
    let hook = hooked(&app, &[Reply::Status(503)], "/hook").await;
    emit_started(&app, &hook.account_id).await;

    assert_eq!(deliver(&app).await, 1);
    let first_sent_at = app.state.now().timestamp();
    advance_to_next_attempt(&app, &hook.account_id).await;
    let second_sent_at = app.state.now().timestamp();
    assert_eq!(deliver(&app).await, 1);

    let received = hook.receiver.received();
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].body, received[1].body,
        "a retry sends the same body"
    );
    assert_eq!(
        check_timestamped(&received[0], &hook.secret),
        Ok(first_sent_at)
    );
    assert_eq!(
        check_timestamped(&received[1], &hook.secret),
        Ok(second_sent_at)
    );
    assert!(second_sent_at > first_sent_at);
    // A hook.receiver holding the first request cannot pass it off as the second: its t is old.
    verify(&received[1], &hook.secret);
    assert!(check_timestamped(&received[0], "whsec_wrong").is_err());
}
