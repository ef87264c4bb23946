//! The hourly pruning removes what is past its retention and nothing else: expired sessions,
//! finished jobs and webhook deliveries, the events of long-ended dungeon runs, and uploaded
//! components no agent uses; pending work, recent rows and money stay.

use chrono::Duration;
use serde_json::json;
use sqlx::Row;

use crate::helpers::{Auth, Body, TestApp};

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query(sql)
        .fetch_one(app.state.store.read())
        .await
        .expect("count")
        .get::<i64, _>(0)
}

#[tokio::test]
async fn pruning_removes_only_what_is_past_its_retention() {
    let app = TestApp::spawn().await;
    let session = app.session("keeper@example.com").await;
    let key = app.v1_key(&session).await;
    let account_id: String = sqlx::query("SELECT account_id FROM sessions")
        .fetch_one(app.state.store.read())
        .await
        .expect("session")
        .get(0);
    let key_id: String = sqlx::query("SELECT id FROM api_keys WHERE family = 'v1'")
        .fetch_one(app.state.store.read())
        .await
        .expect("key")
        .get(0);

    // Two uploaded components; an agent uses one of them.
    let upload = |class: &str| {
        let bytes = crucible::sandbox::builtin_component(class)
            .expect("class")
            .to_vec();
        let (app, key) = (&app, key.clone());
        async move {
            let answer = app
                .request(
                    "POST",
                    "/api/v1/public/strategies",
                    Auth::XApiKey(&key),
                    Some(Body::Raw("application/wasm", bytes)),
                )
                .await;
            assert_eq!(answer.status, 201, "{}", answer.body);
            answer.body["data"]["strategyType"]
                .as_str()
                .expect("type")
                .to_owned()
        }
    };
    let used = upload("rogue").await;
    let _unused = upload("ranger").await;
    let created = app
        .post(
            "/api/v1/public/agents/create",
            Auth::XApiKey(&key),
            json!({"name": "Kept", "username": "kept", "class": "rogue", "modelId": "me/kept",
                   "strategy": {"type": used, "tokenPair": {"base": "SOL", "quote": "USDC"},
                                "timeInterval": "1h"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    // Old and new rows of the outbox and the job table, written as the services would.
    let now = crucible::clock::to_millis(app.state.now());
    let day = 86_400_000_i64;
    for (id, status, created_at) in [
        ("d-old-delivered", "delivered", now - 40 * day),
        ("d-old-dead", "dead", now - 40 * day),
        ("d-old-pending", "pending", now - 40 * day),
        ("d-new-delivered", "delivered", now - day),
    ] {
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, account_id, key_id, event, url, payload, status,
                 next_attempt_at, created_at)
             VALUES ($1, $2, $3, 'agent.trade', 'https://example.com/hook', '{}', $4, $5, $5)",
        )
        .bind(id)
        .bind(&account_id)
        .bind(&key_id)
        .bind(status)
        .bind(created_at)
        .execute(app.state.store.write())
        .await
        .expect("delivery");
    }
    for (id, done_at) in [
        ("j-old-done", Some(now - 40 * day)),
        ("j-new-done", Some(now - day)),
        ("j-pending", None),
    ] {
        sqlx::query(
            "INSERT INTO jobs (id, kind, subject, due_at, done_at, created_at)
             VALUES ($1, 'test.kind', 'x', $2, $3, $2)",
        )
        .bind(id)
        .bind(now - 50 * day)
        .bind(done_at)
        .execute(app.state.store.write())
        .await
        .expect("job");
    }

    // Nothing is old enough yet but the old outbox rows and the finished job.
    let first = app.prune_retention().await.expect("prune");
    assert_eq!((first.deliveries, first.jobs), (2, 1), "{first:?}");
    assert_eq!((first.sessions, first.components), (0, 0), "{first:?}");
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM webhook_deliveries").await,
        2,
        "a pending delivery is never pruned, however old"
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM jobs WHERE id LIKE 'j-%'").await,
        2
    );
    let listed = app
        .get("/api/v1/public/strategies", Auth::XApiKey(&key))
        .await;
    assert_eq!(listed.body["data"].as_array().expect("list").len(), 2);

    // A hundred days on: the session has expired, the unused component is past its retention.
    app.advance(Duration::days(100));
    let later = app.prune_retention().await.expect("prune");
    assert_eq!(later.sessions, 1, "{later:?}");
    assert_eq!(
        later.components, 1,
        "only the component no agent uses: {later:?}"
    );
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM strategy_components").await,
        1
    );
    let agent_still_there = count(
        &app,
        "SELECT COUNT(*) FROM agents a JOIN strategy_components c ON c.id = a.strategy_component",
    )
    .await;
    assert_eq!(agent_still_there, 1);
    // Running again finds nothing more.
    assert_eq!(
        app.prune_retention().await.expect("prune"),
        crucible::retention::Pruned::default()
    );
}
