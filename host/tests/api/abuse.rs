//! Abuse that must fail while honest clients are served: each test performs the abuse and checks
//! both halves.

use crucible::auth::password;
use serde_json::json;

use crate::helpers::{Auth, TestApp};

#[tokio::test]
async fn a_login_flood_hashes_a_few_at_a_time_and_an_honest_login_still_gets_in() {
    let app = TestApp::spawn().await;
    app.session("ann@example.com").await;
    let flood = (0..40).map(|n| {
        app.post(
            "/api/auth/login",
            Auth::None,
            json!({"email": format!("nobody{n}@example.com"), "password": "wrong password 1"}),
        )
    });
    let honest = app.post(
        "/api/auth/login",
        Auth::None,
        json!({"email": "ann@example.com", "password": "correct horse 9"}),
    );
    let (flooded, honest) = tokio::join!(futures_util::future::join_all(flood), honest);
    assert_eq!(honest.status, 200, "{}", honest.body);
    for response in flooded {
        assert!(
            matches!(response.status, 401 | 503),
            "a flood request is refused or told to wait: {} {}",
            response.status,
            response.body
        );
    }
    assert!(
        password::peak_concurrency() <= *password::MAX_CONCURRENT,
        "at most {} hashes at once (19 MiB each), saw {}",
        *password::MAX_CONCURRENT,
        password::peak_concurrency()
    );
}
