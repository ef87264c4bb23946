//! The read caches answer from memory, and never after a change was announced: a registration,
//! a revoked key or a profile edit shows at once; a status that turns with the clock turns at
//! its instant; a change no writer announced (a row edited by hand) shows within 5 s.

use chrono::Duration;
use crucible::chain::Keypair;
use serde_json::json;

use crate::helpers::{Auth, TestApp};

#[tokio::test]
async fn public_tournament_answers_come_from_memory_until_a_change_is_announced() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_cache", 0, 100, Duration::hours(1), 24))
        .await;
    let detail = "/api/tournaments/trn_cache";
    assert_eq!(
        app.get(detail, Auth::None).await.body["name"],
        "Cup trn_cache"
    );

    // Edited behind the server's back: the cached answer stands (it is really cached) …
    sqlx::query("UPDATE tournaments SET name = 'Renamed' WHERE id = 'trn_cache'")
        .execute(app.state.store.write())
        .await
        .expect("rename");
    assert_eq!(
        app.get(detail, Auth::None).await.body["name"],
        "Cup trn_cache"
    );
    assert_eq!(
        app.get("/api/tournaments", Auth::None).await.body["tournaments"][0]["name"],
        "Renamed",
        "the list was never cached, so it reads the row"
    );

    // … until a change is announced: a registration moves the detail, the list and the board.
    let wallet = Keypair::generate().pubkey().to_string();
    app.register_free("trn_cache", &wallet).await;
    let after = app.get(detail, Auth::None).await.body;
    assert_eq!(after["name"], "Renamed");
    assert_eq!(after["currentParticipants"], 1);
    let board = app
        .get("/api/tournaments/trn_cache/leaderboard", Auth::None)
        .await;
    assert_eq!(board.body["totalEntries"], 1, "{}", board.body);

    // The status turns at the start, scheduler or not: an answer cached 2 s before the start
    // ends at that instant, not 5 s after it was cached.
    assert_eq!(after["status"], "upcoming");
    app.advance(Duration::hours(1) - Duration::seconds(2));
    assert_eq!(app.get(detail, Auth::None).await.body["status"], "upcoming");
    app.advance(Duration::seconds(2));
    assert_eq!(app.get(detail, Auth::None).await.body["status"], "live");

    // An unannounced change is never served for more than 5 s.
    sqlx::query("UPDATE tournaments SET name = 'Quietly' WHERE id = 'trn_cache'")
        .execute(app.state.store.write())
        .await
        .expect("rename");
    app.advance(Duration::seconds(4));
    assert_eq!(app.get(detail, Auth::None).await.body["name"], "Renamed");
    app.advance(Duration::seconds(1));
    assert_eq!(app.get(detail, Auth::None).await.body["name"], "Quietly");
}

/// A registration reads its tournament from memory, trusting it only for what never changes:
/// a tournament cancelled or filled behind the node's back (no event announced it) refuses the
/// next registration all the same, with the answer a fresh read gives, and writes nothing.
#[tokio::test]
async fn a_registration_checks_again_what_its_cached_tournament_may_have_missed() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_seats", 0, 3, Duration::hours(1), 24))
        .await;
    let register = |wallet: String| {
        let app = &app;
        async move {
            app.post(
                "/api/tournaments/trn_seats/register",
                Auth::None,
                json!({"registeredWallet": wallet, "txSignature": null}),
            )
            .await
        }
    };
    let first = register(Keypair::generate().pubkey().to_string()).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let second = register(Keypair::generate().pubkey().to_string()).await;
    assert_eq!(second.status, 201, "{}", second.body);
    let tournaments = app
        .state
        .caches
        .stats()
        .into_iter()
        .find(|(name, _)| *name == "tournaments")
        .expect("the tournaments cache is counted");
    assert!(
        tournaments.1.0 >= 1,
        "the second registration read its tournament from memory: {tournaments:?}"
    );

    // Filled behind the node's back: refused as full, nothing written.
    sqlx::query("UPDATE tournaments SET current_participants = 3 WHERE id = 'trn_seats'")
        .execute(app.state.store.write())
        .await
        .expect("fill");
    let full = register(Keypair::generate().pubkey().to_string()).await;
    assert_eq!(full.status, 409, "{}", full.body);
    // Cancelled behind its back: refused as closed (410, as a fresh read answers).
    sqlx::query(
        "UPDATE tournaments SET status = 'cancelled', current_participants = 2
         WHERE id = 'trn_seats'",
    )
    .execute(app.state.store.write())
    .await
    .expect("cancel");
    let closed = register(Keypair::generate().pubkey().to_string()).await;
    assert_eq!(closed.status, 410, "{}", closed.body);
    let (registered, seated): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM tournament_registrations WHERE tournament_id = 'trn_seats'),
                current_participants FROM tournaments WHERE id = 'trn_seats'",
    )
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    assert_eq!(
        (registered, seated),
        (2, 2),
        "the refused ones wrote nothing"
    );

    // An unknown id is not remembered: a tournament created after a 404 registers at once.
    let early = app
        .post(
            "/api/tournaments/trn_later/register",
            Auth::None,
            json!({"registeredWallet": Keypair::generate().pubkey().to_string(), "txSignature": null}),
        )
        .await;
    assert_eq!(early.status, 404, "{}", early.body);
    app.create_tournament(app.new_tournament("trn_later", 0, 3, Duration::hours(1), 24))
        .await;
    app.register_free("trn_later", &Keypair::generate().pubkey().to_string())
        .await;
}

#[tokio::test]
async fn a_cached_key_is_refused_the_moment_it_is_revoked() {
    let app = TestApp::spawn().await;
    let (session, key) = app.account_with_key("cached@example.com", &["read"]).await;
    assert_eq!(
        app.get("/api/account", Auth::Bearer(&key)).await.status,
        200
    );
    // The key is in memory now: later uses are checked without the database.
    assert!(!app.state.caches.keys.is_empty());

    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    let id = keys.body["keys"][0]["keyId"]
        .as_str()
        .expect("id")
        .to_owned();
    let revoked = app
        .delete(&format!("/api/api-keys/{id}"), Auth::Session(&session))
        .await;
    assert!((200..300).contains(&revoked.status), "{}", revoked.body);
    let refused = app.get("/api/account", Auth::Bearer(&key)).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.body.to_string().contains("revoked"),
        "{}",
        refused.body
    );
}

#[tokio::test]
async fn the_account_answer_follows_every_edit_at_once() {
    let app = TestApp::spawn().await;
    let (session, key) = app.account_with_key("edits@example.com", &["read"]).await;
    assert!(app.get("/api/account", Auth::Bearer(&key)).await.body["displayName"].is_null());
    let patched = app
        .patch(
            "/api/account",
            Auth::Session(&session),
            json!({"displayName": "Ada"}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        app.get("/api/account", Auth::Bearer(&key)).await.body["displayName"],
        "Ada"
    );
}

#[tokio::test]
async fn a_cached_board_is_gzipped_for_clients_that_accept_it() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_gzip", 0, 100, Duration::hours(1), 24))
        .await;
    for _ in 0..20 {
        let wallet = Keypair::generate().pubkey().to_string();
        app.register_free("trn_gzip", &wallet).await;
    }
    let url = format!("{}/api/tournaments/trn_gzip/leaderboard", app.address);
    let fetch = |accept: Option<&'static str>| {
        let mut request = app.client.get(&url);
        if let Some(accept) = accept {
            request = request.header("accept-encoding", accept);
        }
        async move {
            let response = request.send().await.expect("request");
            assert_eq!(response.status(), 200);
            let headers = response.headers().clone();
            let header = |name: &str| {
                headers
                    .get(name)
                    .map(|value| value.to_str().expect("ascii").to_owned())
            };
            assert_eq!(header("vary").as_deref(), Some("accept-encoding"));
            assert_eq!(header("content-type").as_deref(), Some("application/json"));
            let encoding = header("content-encoding");
            (encoding, response.bytes().await.expect("body"))
        }
    };

    let (encoding, plain) = fetch(None).await;
    assert_eq!(encoding, None, "no Accept-Encoding: the JSON as it is");
    let board: serde_json::Value = serde_json::from_slice(&plain).expect("json");
    assert_eq!(board["totalEntries"], 20);
    assert!(plain.len() > 1024, "{} bytes", plain.len());

    for accept in ["gzip", "br, gzip;q=0.8", "*"] {
        let (encoding, gzipped) = fetch(Some(accept)).await;
        assert_eq!(encoding.as_deref(), Some("gzip"), "{accept}");
        assert!(
            gzipped.len() * 2 < plain.len(),
            "{accept}: {} bytes",
            gzipped.len()
        );
        let mut json = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gzipped[..]), &mut json)
            .expect("gunzip");
        assert_eq!(json, plain, "{accept}: the same answer, compressed");
    }
    for accept in ["identity", "gzip;q=0", "br"] {
        let (encoding, body) = fetch(Some(accept)).await;
        assert_eq!(encoding, None, "{accept}");
        assert_eq!(body, plain, "{accept}");
    }
}
