//! `/api/account…`: profile, proven wallets, scopes, and the account's lists.

use crate::helpers::{Auth, TestApp, TestWallet};
use serde_json::json;

#[tokio::test]
async fn patch_updates_harmless_fields_and_null_clears_them() {
    let app = TestApp::spawn().await;
    let session = app.session("p1@example.com").await;
    let patched = app
        .patch("/api/account", Auth::Session(&session),
               json!({"displayName": "  Ada  ", "avatarUrl": "https://img.example.com/a.png", "bio": "trades"}))
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["displayName"], "Ada");
    assert_eq!(patched.body["avatarUrl"], "https://img.example.com/a.png");

    let cleared = app
        .patch(
            "/api/account",
            Auth::Session(&session),
            json!({"bio": null}),
        )
        .await;
    assert_eq!(cleared.body["bio"], serde_json::Value::Null);
    assert_eq!(cleared.body["displayName"], "Ada", "absent fields are kept");
}

#[tokio::test]
async fn patch_refuses_unknown_and_invalid_fields_without_changing_anything() {
    let app = TestApp::spawn().await;
    let session = app.session("p2@example.com").await;
    app.patch(
        "/api/account",
        Auth::Session(&session),
        json!({"displayName": "Ada"}),
    )
    .await;
    let cases = [
        (json!({"email": "x@example.com"}), "email"),
        (json!({"displayName": "Bea", "isAdmin": true}), "isAdmin"),
        (json!({"displayName": "x".repeat(41)}), "displayName"),
        (json!({"avatarUrl": "javascript:alert(1)"}), "avatarUrl"),
        (json!({"displayName": 7}), "displayName"),
    ];
    for (body, mentions) in cases {
        let response = app
            .patch("/api/account", Auth::Session(&session), body.clone())
            .await;
        assert_eq!(response.status, 400, "{body}");
        assert!(
            response.error().contains(mentions),
            "{body}: {}",
            response.error()
        );
    }
    let me = app.get("/api/account", Auth::Session(&session)).await;
    assert_eq!(me.body["displayName"], "Ada");
    assert_eq!(me.body["email"], "p2@example.com");
}

#[tokio::test]
async fn scopes_are_enforced_for_keys_while_sessions_pass_every_scope() {
    let app = TestApp::spawn().await;
    let (session, read_only) = app.account_with_key("p3@example.com", &["read"]).await;
    let write_only = app
        .create_key(&session, json!({"name": "w", "scopes": ["write"]}))
        .await;
    let write_only = write_only["key"].as_str().expect("key");

    assert_eq!(
        app.get("/api/account", Auth::Bearer(&read_only))
            .await
            .status,
        200
    );
    let refused = app
        .patch(
            "/api/account",
            Auth::Bearer(&read_only),
            json!({"bio": "x"}),
        )
        .await;
    assert_eq!(refused.status, 403);
    assert!(refused.error().contains("`write` scope"));
    assert_eq!(
        app.get("/api/account/tournaments", Auth::Bearer(write_only))
            .await
            .status,
        403
    );
    assert_eq!(
        app.patch(
            "/api/account",
            Auth::Bearer(write_only),
            json!({"bio": "x"})
        )
        .await
        .status,
        200
    );
    assert_eq!(
        app.get("/api/account/payouts", Auth::Session(&session))
            .await
            .status,
        200
    );
    assert_eq!(app.get("/api/account", Auth::None).await.status, 401);
}

#[tokio::test]
async fn linking_a_wallet_needs_proof_and_lists_exactly_the_proven_wallets() {
    let app = TestApp::spawn().await;
    let (session, key) = app
        .account_with_key("p4@example.com", &["read", "write"])
        .await;
    let wallet = TestWallet::new(21);
    let (nonce, signature) = wallet.prove(&app).await;

    // A wrong signature links nothing.
    let forged = app
        .post("/api/account/wallets", Auth::Bearer(&key),
              json!({"wallet": wallet.address(), "nonce": nonce, "signature": TestWallet::new(22).sign("x")}))
        .await;
    assert_eq!(forged.status, 401);
    let me = app.get("/api/account", Auth::Session(&session)).await;
    assert_eq!(
        me.body["allChainWallets"]
            .as_array()
            .expect("wallets")
            .len(),
        1
    );

    let linked = app
        .post(
            "/api/account/wallets",
            Auth::Bearer(&key),
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(linked.status, 201, "{}", linked.body);
    let wallets = linked.body["allChainWallets"].as_array().expect("wallets");
    assert_eq!(wallets.len(), 2);
    assert!(wallets.contains(&json!(wallet.address())));
    assert_eq!(
        app.get("/api/account", Auth::Bearer(&key)).await.body["allChainWallets"],
        linked.body["allChainWallets"]
    );

    let (nonce, signature) = wallet.prove(&app).await;
    let again = app
        .post(
            "/api/account/wallets",
            Auth::Session(&session),
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(again.status, 200, "already linked here");

    let other = app.session("p5@example.com").await;
    let (nonce, signature) = wallet.prove(&app).await;
    let stolen = app
        .post(
            "/api/account/wallets",
            Auth::Session(&other),
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(stolen.status, 409);
    assert!(stolen.error().contains("another account"));
}

#[tokio::test]
async fn a_wallet_signed_in_account_can_sign_in_to_its_linked_wallet() {
    let app = TestApp::spawn().await;
    let session = app.session("p6@example.com").await;
    let wallet = TestWallet::new(23);
    let (nonce, signature) = wallet.prove(&app).await;
    let linked = app
        .post(
            "/api/account/wallets",
            Auth::Session(&session),
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(linked.status, 201);
    let (nonce, signature) = wallet.prove(&app).await;
    let signed_in = app
        .post(
            "/api/auth/wallet",
            Auth::None,
            json!({"wallet": wallet.address(), "nonce": nonce, "signature": signature}),
        )
        .await;
    assert_eq!(signed_in.status, 200);
    assert_eq!(signed_in.body["email"], "p6@example.com");
}

#[tokio::test]
async fn tournament_and_payout_lists_come_from_the_accounts_own_rows() {
    let app = TestApp::spawn().await;
    let mine = app.session("p7@example.com").await;
    let theirs = app.session("p8@example.com").await;
    assert_eq!(
        app.get("/api/account/tournaments", Auth::Session(&mine))
            .await
            .body,
        json!({"tournaments": []})
    );
    assert_eq!(
        app.get("/api/account/payouts", Auth::Session(&mine))
            .await
            .body,
        json!({"payouts": []})
    );

    let me = app.get("/api/account", Auth::Session(&mine)).await.body;
    let account_id = me["id"].as_str().expect("id");
    let wallet = me["allChainWallets"][0].as_str().expect("wallet");
    let store = app.state.store.write();
    sqlx::query(
        "INSERT INTO tournaments (id, name, type, visibility, status, entry_fee_raw, max_participants, escrow_wallet,
                                  payout_split, start_date, end_date, created_at)
         VALUES ('trn_1', 'Daily', 'highest_pnl', 'public', 'live', 1000000, 100, 'escrow', '[100]', 1, 2, 1)",
    )
    .execute(store)
    .await
    .expect("tournament");
    sqlx::query("INSERT INTO tournament_registrations (tournament_id, wallet, account_id, registered_at) VALUES ('trn_1', $1, $2, 5)")
        .bind(wallet)
        .bind(account_id)
        .execute(store)
        .await
        .expect("registration");
    sqlx::query(
        "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at)
         VALUES ('pay_1', $1, $2, 'tournament', 'trn_1', 1, 9000000000, 'mint', 'pending', 6)",
    )
    .bind(account_id)
    .bind(wallet)
    .execute(store)
    .await
    .expect("payout");

    let tournaments = app
        .get("/api/account/tournaments", Auth::Session(&mine))
        .await
        .body;
    assert_eq!(tournaments["tournaments"][0]["tournamentId"], "trn_1");
    assert_eq!(tournaments["tournaments"][0]["wallet"], wallet);
    let payouts = app
        .get("/api/account/payouts", Auth::Session(&mine))
        .await
        .body;
    assert_eq!(payouts["payouts"][0]["amountRaw"], "9000000000");
    assert_eq!(payouts["payouts"][0]["status"], "pending");
    assert_eq!(
        app.get("/api/account/payouts", Auth::Session(&theirs))
            .await
            .body,
        json!({"payouts": []})
    );
}

#[tokio::test]
async fn a_json_array_is_never_read_as_an_object() {
    let app = TestApp::spawn().await;
    let session = app.session("arrays@example.com").await;
    let patched = app
        .patch(
            "/api/account",
            Auth::Session(&session),
            json!(["Arr Name", null, null]),
        )
        .await;
    assert_eq!(patched.status, 400, "{}", patched.body);
    assert!(
        patched.error().contains("the body must be an object"),
        "{}",
        patched.body
    );
    let me = app.get("/api/account", Auth::Session(&session)).await;
    assert_ne!(me.body["displayName"], "Arr Name");

    let login = app
        .post(
            "/api/auth/login",
            Auth::None,
            json!(["arrays@example.com", "correct horse 9"]),
        )
        .await;
    assert_eq!(login.status, 400, "{}", login.body);
    assert!(login.headers.get("set-cookie").is_none());

    // The v1 family reads its bodies through the same extractor.
    let v1 = app
        .post(
            "/api/v1/api-keys",
            Auth::Session(&session),
            json!(["a key", null, ["agents:read"]]),
        )
        .await;
    assert_eq!(v1.status, 400, "{}", v1.body);
    assert_eq!(v1.body["error"]["code"], "VALIDATION_ERROR", "{}", v1.body);
}
