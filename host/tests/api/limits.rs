//! Limits as the contract states them: ten active keys per user across both key families, and
//! request limits that hold for every window of their length (the manual clock moves the
//! window), each refusal a 429 with `retryAfter` in the family's error form.

use crate::helpers::{Auth, TestApp, TestResponse, v1_code};
use chrono::Duration;
use crucible::domain::WalletAddress;
use serde_json::json;

fn wallet(seed: u8) -> String {
    WalletAddress::from_public_key(&[seed; 32]).to_string()
}

async fn mint_account_key(app: &TestApp, session: &str, name: &str) -> TestResponse {
    app.post(
        "/api/api-keys",
        Auth::Session(session),
        json!({"name": name}),
    )
    .await
}

async fn mint_v1_key(app: &TestApp, session: &str, name: &str) -> TestResponse {
    app.post(
        "/api/v1/api-keys",
        Auth::Session(session),
        json!({"name": name, "permissions": ["agents:read"]}),
    )
    .await
}

#[tokio::test]
async fn account_and_v1_keys_share_one_budget_of_ten_active_keys() {
    let app = TestApp::spawn().await;
    let session = app.session("keys@example.com").await;
    let mut account_keys = Vec::new();
    for n in 0..6 {
        let created = mint_account_key(&app, &session, &format!("a{n}")).await;
        assert_eq!(created.status, 201, "{}", created.body);
        account_keys.push(created.body["keyId"].as_str().expect("id").to_owned());
    }
    for n in 0..4 {
        let created = mint_v1_key(&app, &session, &format!("v{n}")).await;
        assert_eq!(created.status, 201, "{}", created.body);
    }

    // The 11th of either family is refused, each in its own error form.
    let account_11th = mint_account_key(&app, &session, "a-extra").await;
    assert_eq!(account_11th.status, 409, "{}", account_11th.body);
    assert!(
        account_11th.error().contains("at most 10"),
        "{}",
        account_11th.body
    );
    let v1_11th = mint_v1_key(&app, &session, "v-extra").await;
    assert_eq!(v1_11th.status, 409, "{}", v1_11th.body);
    assert_eq!(v1_code(&v1_11th), "CONFLICT");
    // Nothing was written by the refusals.
    let (stored,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM api_keys")
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
    assert_eq!(stored, 10);

    // A revoked account key frees a seat for a v1 key.
    let revoked = app
        .delete(
            &format!("/api/api-keys/{}", account_keys[0]),
            Auth::Session(&session),
        )
        .await;
    assert_eq!(revoked.status, 200);
    assert_eq!(mint_v1_key(&app, &session, "v-after").await.status, 201);
    assert_eq!(
        mint_account_key(&app, &session, "a-after").await.status,
        409
    );

    // Another user has a budget of their own.
    let other = app.session("other@example.com").await;
    assert_eq!(mint_v1_key(&app, &other, "mine").await.status, 201);
}

#[tokio::test]
async fn expired_keys_of_either_family_do_not_count() {
    let app = TestApp::spawn().await;
    let session = app.session("expiry@example.com").await;
    for n in 0..5 {
        let short = app
            .post(
                "/api/api-keys",
                Auth::Session(&session),
                json!({"name": format!("a{n}"), "expiresInDays": 1}),
            )
            .await;
        assert_eq!(short.status, 201, "{}", short.body);
        let short = app
            .post(
                "/api/v1/api-keys",
                Auth::Session(&session),
                json!({"name": format!("v{n}"), "permissions": ["agents:read"], "expiresInDays": 1}),
            )
            .await;
        assert_eq!(short.status, 201, "{}", short.body);
    }
    assert_eq!(mint_v1_key(&app, &session, "full").await.status, 409);
    app.advance(Duration::days(1) + Duration::seconds(1));
    for n in 0..5 {
        assert_eq!(
            mint_account_key(&app, &session, &format!("b{n}"))
                .await
                .status,
            201
        );
        assert_eq!(
            mint_v1_key(&app, &session, &format!("w{n}")).await.status,
            201
        );
    }
    assert_eq!(
        mint_account_key(&app, &session, "eleventh").await.status,
        409
    );
}

#[tokio::test]
async fn concurrent_mints_of_both_families_at_nine_admit_exactly_one() {
    let app = TestApp::spawn().await;
    let session = app.session("race@example.com").await;
    for n in 0..9 {
        assert_eq!(
            mint_account_key(&app, &session, &format!("a{n}"))
                .await
                .status,
            201
        );
    }
    for round in 0..2 {
        let account = mint_account_key(&app, &session, "racer-a");
        let v1 = mint_v1_key(&app, &session, "racer-v");
        let (account, v1) = tokio::join!(account, v1);
        let mut statuses = [account.status, v1.status];
        statuses.sort_unstable();
        // First round: one of the two gets the 10th seat; second round: both are refused.
        if round == 0 {
            assert_eq!(statuses, [201, 409]);
        } else {
            assert_eq!(statuses, [409, 409]);
        }
    }
    let (active,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NULL")
            .fetch_one(app.state.store.read())
            .await
            .expect("count");
    assert_eq!(active, 10);
}

/// A free tournament that started a minute ago.
async fn free_tournament(app: &TestApp, id: &str) {
    app.create_tournament(app.new_tournament(id, 0, 1000, -Duration::minutes(1), 24))
        .await;
}

async fn register(app: &TestApp, id: &str, seed: u8) -> TestResponse {
    app.post(
        &format!("/api/tournaments/{id}/register"),
        Auth::None,
        json!({"registeredWallet": wallet(seed), "txSignature": null}),
    )
    .await
}

fn assert_limited(response: &TestResponse) -> u64 {
    assert_eq!(response.status, 429, "{}", response.body);
    let retry_after = response.body["retryAfter"].as_u64().expect("retryAfter");
    assert!(retry_after >= 1);
    let header: u64 = response.headers["retry-after"]
        .to_str()
        .expect("header")
        .parse()
        .expect("seconds");
    assert_eq!(header, retry_after);
    retry_after
}

#[tokio::test]
async fn registrations_are_limited_to_ten_a_minute_per_ip_across_tournaments() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    for id in ["trn_ip_a", "trn_ip_b", "trn_ip_c"] {
        free_tournament(&app, id).await;
    }
    // 4 + 4 + 2: no tournament reaches its own limit of 5.
    let mut seed = 1;
    for (id, count) in [("trn_ip_a", 4), ("trn_ip_b", 4), ("trn_ip_c", 2)] {
        for _ in 0..count {
            let response = register(&app, id, seed).await;
            assert_eq!(response.status, 201, "{}", response.body);
            seed += 1;
        }
    }
    let eleventh = register(&app, "trn_ip_c", seed).await;
    assert!(assert_limited(&eleventh) <= 60);
    assert_eq!(
        app.get("/api/tournaments/trn_ip_c", Auth::None).await.body["currentParticipants"],
        2,
        "the refused registration wrote nothing"
    );

    // Still refused a second before the minute is over, admitted once it is.
    app.advance(Duration::seconds(59));
    assert_eq!(assert_limited(&register(&app, "trn_ip_c", seed).await), 1);
    app.advance(Duration::seconds(1));
    assert_eq!(register(&app, "trn_ip_c", seed).await.status, 201);
}

#[tokio::test]
async fn a_limit_holds_for_every_window_not_just_the_first() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    free_tournament(&app, "trn_drip").await;
    // One registration attempt every 5 s for 3 minutes against 5 / 60 s per tournament: never
    // more than 5 admitted within any 60 s.
    let mut admitted = Vec::new();
    for step in 0..36u8 {
        let response = register(&app, "trn_drip", step + 1).await;
        match response.status {
            201 => admitted.push(i64::from(step) * 5),
            429 => {}
            other => panic!("unexpected {other}: {}", response.body),
        }
        app.advance(Duration::seconds(5));
    }
    for (i, start) in admitted.iter().enumerate() {
        let in_window = admitted[i..]
            .iter()
            .take_while(|at| **at < start + 60)
            .count();
        assert!(in_window <= 5, "{admitted:?}");
    }
    assert_eq!(admitted.len(), 15, "the budget is used: {admitted:?}");
}

#[tokio::test]
async fn v1_start_stop_is_limited_to_one_hundred_an_hour() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    let session = app.session("control@example.com").await;
    let key = app.v1_key(&session).await;
    // Calls count whatever their outcome: starting and stopping an unknown agent is a 404.
    for n in 0..100 {
        let action = if n % 2 == 0 { "start" } else { "stop" };
        let response = app
            .post(
                &format!("/api/v1/public/agents/agt_missing/{action}"),
                Auth::XApiKey(&key),
                json!(null),
            )
            .await;
        assert_eq!(response.status, 404, "call {n}: {}", response.body);
    }
    let refused = app
        .post(
            "/api/v1/public/agents/agt_missing/stop",
            Auth::XApiKey(&key),
            json!(null),
        )
        .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(v1_code(&refused), "RATE_LIMITED");
    assert!(
        refused.body["error"]["details"]["retryAfter"]
            .as_u64()
            .expect("retryAfter")
            >= 1
    );
    assert!(refused.headers.contains_key("retry-after"));

    // Reads have their own budget; the control budget returns only after the full hour.
    assert_eq!(
        app.get("/api/v1/public/agents", Auth::XApiKey(&key))
            .await
            .status,
        200
    );
    app.advance(Duration::minutes(59));
    let still = app
        .post(
            "/api/v1/public/agents/agt_missing/start",
            Auth::XApiKey(&key),
            json!(null),
        )
        .await;
    assert_eq!(still.status, 429);
    app.advance(Duration::minutes(1));
    let again = app
        .post(
            "/api/v1/public/agents/agt_missing/start",
            Auth::XApiKey(&key),
            json!(null),
        )
        .await;
    assert_eq!(again.status, 404);
}

#[tokio::test]
async fn v1_reads_are_limited_to_one_thousand_an_hour() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    let session = app.session("reader@example.com").await;
    let key = app.v1_key(&session).await;
    for n in 0..1000 {
        let response = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
        assert_eq!(response.status, 200, "read {n}: {}", response.body);
    }
    let refused = app.get("/api/v1/public/agents", Auth::XApiKey(&key)).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert_eq!(v1_code(&refused), "RATE_LIMITED");
    assert!(
        refused.body["error"]["details"]["retryAfter"]
            .as_u64()
            .expect("retryAfter")
            >= 1
    );
    // The tournament list is a read too.
    let list = app
        .get("/api/v1/public/tournaments", Auth::XApiKey(&key))
        .await;
    assert_eq!(list.status, 429);
    // Revoking the key and minting another does not reset the account's budget …
    let fresh = app.v1_key(&session).await;
    let refused = app
        .get("/api/v1/public/agents", Auth::XApiKey(&fresh))
        .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    // … while another account is served meanwhile.
    let other = app.session("other-reader@example.com").await;
    let other_key = app.v1_key(&other).await;
    let served = app
        .get("/api/v1/public/agents", Auth::XApiKey(&other_key))
        .await;
    assert_eq!(served.status, 200);
}

#[tokio::test]
async fn ipv6_clients_share_a_limit_per_slash_64_and_forged_hops_are_ignored() {
    let app = TestApp::spawn_with(|config| {
        config.rate_limits = true;
        config.trusted_proxies = 1;
    })
    .await;
    let read = |forwarded: &'static str| {
        let request = app
            .client
            .get(format!("{}/api/tournaments", app.address))
            .header("x-forwarded-for", forwarded);
        async move { request.send().await.expect("request").status().as_u16() }
    };
    // 120 reads a minute: an attacker rotating through addresses of its /64 shares one budget.
    for n in 0..120u32 {
        let status = read(if n % 2 == 0 {
            "2001:db8:7:7::1"
        } else {
            "2001:db8:7:7:ffff::9"
        })
        .await;
        assert_eq!(status, 200, "read {n}");
    }
    assert_eq!(read("2001:db8:7:7:1234::5").await, 429, "same /64");
    // A forged left-most hop does not move the attacker to a fresh budget.
    assert_eq!(read("192.0.2.1, 2001:db8:7:7::3").await, 429);
    // The neighbouring /64 and an IPv4 client are served meanwhile.
    assert_eq!(read("2001:db8:7:8::1").await, 200);
    assert_eq!(read("198.51.100.4").await, 200);
}

#[tokio::test]
async fn health_is_never_limited() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    for n in 0..300 {
        let response = app.get("/api/health", Auth::None).await;
        assert_eq!(response.status, 200, "call {n}: {}", response.body);
    }
    // While the tournament reads of the same IP are limited at 120 a minute.
    let mut statuses = Vec::new();
    for _ in 0..121 {
        statuses.push(app.get("/api/tournaments", Auth::None).await.status);
    }
    assert!(statuses[..120].iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(statuses[120], 429);
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
}
