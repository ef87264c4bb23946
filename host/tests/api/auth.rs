//! Sign-up, sign-in, sign-out and wallet proofs through the real router.

use crate::helpers::{Auth, Body, TestApp, TestWallet};
use chrono::Duration;
use serde_json::json;

#[tokio::test]
async fn signup_creates_an_account_with_an_embedded_wallet_and_a_session() {
    let app = TestApp::spawn().await;
    let response = app.signup("Ann@Example.com").await;
    assert_eq!(response.status, 201, "{}", response.body);
    assert_eq!(response.body["email"], "ann@example.com");
    let wallets = response.body["allChainWallets"]
        .as_array()
        .expect("wallets");
    assert_eq!(wallets.len(), 1);
    assert_eq!(response.body["wallets"][0]["kind"], "custodial");
    let cookie = response
        .headers
        .get("set-cookie")
        .expect("cookie")
        .to_str()
        .expect("ascii");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );

    let me = app
        .get("/api/account", Auth::Session(&response.session_token()))
        .await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["id"], response.body["id"]);
    assert_eq!(me.body["allChainWallets"], response.body["allChainWallets"]);
    assert!(me.body["termsAcceptedAt"].is_string());

    // The custodial secret is stored sealed, never in plaintext.
    let (sealed,): (String,) =
        sqlx::query_as("SELECT secret_sealed FROM custodial_wallets WHERE address = $1")
            .bind(wallets[0].as_str().expect("address"))
            .fetch_one(app.state.store.read())
            .await
            .expect("row");
    let opened = app
        .state
        .sealer
        .open(&sealed)
        .expect("opens with the master key");
    assert_eq!(opened.len(), 32);
}

#[tokio::test]
async fn signup_is_refused_without_both_acceptances() {
    let app = TestApp::spawn().await;
    for (terms, privacy) in [(false, true), (true, false), (false, false)] {
        let body = json!({"email": "a@example.com", "password": "correct horse 9",
                          "acceptTerms": terms, "acceptPrivacy": privacy});
        let response = app.post("/api/auth/signup", Auth::None, body).await;
        assert_eq!(response.status, 400);
        assert!(
            response.error().contains("acceptTerms"),
            "{}",
            response.error()
        );
    }
    let missing = app
        .post(
            "/api/auth/signup",
            Auth::None,
            json!({"email": "a@example.com", "password": "correct horse 9"}),
        )
        .await;
    assert_eq!(missing.status, 400);
    // Nothing was created by the refusals.
    assert_eq!(app.signup("a@example.com").await.status, 201);
}

#[tokio::test]
async fn signup_validates_email_and_states_the_password_rules() {
    let app = TestApp::spawn().await;
    let bad_email = app
        .post("/api/auth/signup", Auth::None,
              json!({"email": "nope", "password": "correct horse 9", "acceptTerms": true, "acceptPrivacy": true}))
        .await;
    assert_eq!(bad_email.status, 400);
    assert!(bad_email.error().contains("e-mail"));
    let weak = app
        .post("/api/auth/signup", Auth::None,
              json!({"email": "b@example.com", "password": "short", "acceptTerms": true, "acceptPrivacy": true}))
        .await;
    assert_eq!(weak.status, 400);
    assert!(
        weak.error().contains("10 to 128 characters"),
        "{}",
        weak.error()
    );
}

#[tokio::test]
async fn a_taken_email_is_a_conflict() {
    let app = TestApp::spawn().await;
    assert_eq!(app.signup("c@example.com").await.status, 201);
    let again = app.signup("C@example.com").await;
    assert_eq!(again.status, 409);
    assert!(again.error().contains("already exists"));
}

#[tokio::test]
async fn bodies_that_do_not_parse_get_a_json_400() {
    let app = TestApp::spawn().await;
    let cases = [
        Body::Raw("application/json", b"{not json".to_vec()),
        Body::Raw("text/plain", b"{}".to_vec()),
        Body::Json(json!({"email": 5, "password": "x"})),
        Body::Json(json!([1, 2, 3])),
    ];
    for body in cases {
        let response = app
            .request("POST", "/api/auth/signup", Auth::None, Some(body))
            .await;
        assert_eq!(response.status, 400, "{}", response.body);
        assert!(!response.error().is_empty());
    }
}

#[tokio::test]
async fn login_logout_and_wrong_passwords() {
    let app = TestApp::spawn().await;
    app.session("d@example.com").await;
    let wrong = app
        .post(
            "/api/auth/login",
            Auth::None,
            json!({"email": "d@example.com", "password": "wrong horse 9"}),
        )
        .await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.error(), "wrong e-mail or password");
    let unknown = app
        .post(
            "/api/auth/login",
            Auth::None,
            json!({"email": "x@example.com", "password": "correct horse 9"}),
        )
        .await;
    assert_eq!(unknown.status, 401);
    assert_eq!(
        unknown.error(),
        wrong.error(),
        "unknown e-mail and wrong password look alike"
    );

    let login = app
        .post(
            "/api/auth/login",
            Auth::None,
            json!({"email": "D@example.com", "password": "correct horse 9"}),
        )
        .await;
    assert_eq!(login.status, 200, "{}", login.body);
    let token = login.session_token();
    assert_eq!(
        app.get("/api/account", Auth::Session(&token)).await.status,
        200
    );

    let logout = app
        .post("/api/auth/logout", Auth::Session(&token), json!({}))
        .await;
    assert_eq!(logout.status, 204);
    assert!(
        logout.headers["set-cookie"]
            .to_str()
            .expect("ascii")
            .contains("Max-Age=0")
    );
    let after = app.get("/api/account", Auth::Session(&token)).await;
    assert_eq!(after.status, 401);
}

#[tokio::test]
async fn sessions_expire_after_thirty_idle_days_and_use_slides_them() {
    let app = TestApp::spawn().await;
    let token = app.session("e@example.com").await;
    app.advance(Duration::days(29));
    assert_eq!(
        app.get("/api/account", Auth::Session(&token)).await.status,
        200
    );
    // The slide is written off the request path; wait for it to land.
    let slid_at = crucible::clock::to_millis(crucible::clock::Clock::now(app.clock.as_ref()));
    for _ in 0..100 {
        let (seen,): (i64,) = sqlx::query_as("SELECT MAX(last_seen_at) FROM sessions")
            .fetch_one(app.state.store.read())
            .await
            .expect("sessions");
        if seen >= slid_at {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    app.advance(Duration::days(29));
    assert_eq!(
        app.get("/api/account", Auth::Session(&token)).await.status,
        200,
        "use slid the expiry"
    );

    let idle = app.session("idle@example.com").await;
    app.advance(Duration::days(31));
    assert_eq!(
        app.get("/api/account", Auth::Session(&idle)).await.status,
        401
    );
    assert_eq!(
        app.get("/api/account", Auth::Session("made-up"))
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn wallet_sign_in_creates_the_account_once_then_signs_in() {
    let app = TestApp::spawn().await;
    let wallet = TestWallet::new(11);
    let (nonce, signature) = wallet.prove(&app).await;
    let first = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature,
                     "acceptTerms": true, "acceptPrivacy": true}),
        )
        .await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.body["allChainWallets"], json!([wallet.address()]));
    assert!(first.body["email"].is_null());

    let (nonce, signature) = wallet.prove(&app).await;
    let second = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.body["id"], first.body["id"]);
}

#[tokio::test]
async fn a_nonce_works_once_for_its_own_wallet_before_it_expires() {
    let app = TestApp::spawn().await;
    let wallet = TestWallet::new(12);
    let sign_in = |nonce: &str, signature: &str, address: String| json!({"wallet": address, "nonce": nonce, "signature": signature, "acceptTerms": true, "acceptPrivacy": true});

    // A bad signature is refused and leaves the nonce usable.
    let (nonce, signature) = wallet.prove(&app).await;
    let forged = TestWallet::new(13).sign("whatever");
    let bad = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            sign_in(&nonce, &forged, wallet.address()),
        )
        .await;
    assert_eq!(bad.status, 401);
    assert!(bad.error().contains("signature"));
    let good = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            sign_in(&nonce, &signature, wallet.address()),
        )
        .await;
    assert_eq!(good.status, 201);

    // Replay of a used nonce.
    let replay = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            sign_in(&nonce, &signature, wallet.address()),
        )
        .await;
    assert_eq!(replay.status, 401);
    assert!(replay.error().contains("nonce"));

    // A nonce issued for one wallet does not serve another.
    let other = TestWallet::new(14);
    let (nonce, _) = wallet.prove(&app).await;
    let response = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            sign_in(&nonce, &other.sign("x"), other.address()),
        )
        .await;
    assert_eq!(response.status, 401);

    // Expired after five minutes.
    let (nonce, signature) = wallet.prove(&app).await;
    app.advance(Duration::minutes(6));
    let late = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            sign_in(&nonce, &signature, wallet.address()),
        )
        .await;
    assert_eq!(late.status, 401);
}

#[tokio::test]
async fn wallet_sign_up_needs_acceptance_and_malformed_input_is_400() {
    let app = TestApp::spawn().await;
    let wallet = TestWallet::new(15);
    let (nonce, signature) = wallet.prove(&app).await;
    let refused = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(refused.status, 400);
    // The refusal did not burn the nonce.
    let accepted = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature,
                     "acceptTerms": true, "acceptPrivacy": true}),
        )
        .await;
    assert_eq!(accepted.status, 201, "{}", accepted.body);

    let bad_wallet = app
        .post(
            "/api/auth/nonce",
            Auth::None,
            json!({"wallet": "not-a-wallet"}),
        )
        .await;
    assert_eq!(bad_wallet.status, 400);
    let (nonce, _) = wallet.prove(&app).await;
    let bad_signature = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": "0OIl"}),
        )
        .await;
    assert_eq!(bad_signature.status, 400);
}

#[tokio::test]
async fn sign_in_attempts_are_rate_limited_per_ip() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    let mut last = None;
    for _ in 0..21 {
        last = Some(
            app.post(
                "/api/auth/login",
                Auth::None,
                json!({"email": "z@example.com", "password": "x"}),
            )
            .await,
        );
    }
    let last = last.expect("responses");
    assert_eq!(last.status, 429);
    let retry_after = last.body["retryAfter"].as_u64().expect("retryAfter");
    assert!(retry_after >= 1);
    assert_eq!(
        last.headers["retry-after"].to_str().expect("ascii"),
        retry_after.to_string()
    );
    // Health is never limited.
    for _ in 0..50 {
        assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
    }
}

#[tokio::test]
async fn sessions_survive_a_restart() {
    let app = TestApp::spawn().await;
    let token = app.session("f@example.com").await;
    let app = app.restart().await;
    let me = app.get("/api/account", Auth::Session(&token)).await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["email"], "f@example.com");
}
