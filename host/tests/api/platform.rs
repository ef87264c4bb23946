//! Health, the OpenAPI document, and JSON answers for unknown routes and methods.

use crate::helpers::{Auth, TestApp};

#[tokio::test]
async fn health_reports_version_and_database() {
    let app = TestApp::spawn().await;
    let response = app.get("/api/health", Auth::None).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body["status"], "ok");
    assert_eq!(response.body["database"], "ok");
    assert_eq!(response.body["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test]
async fn health_is_503_when_the_database_is_gone() {
    let app = TestApp::spawn().await;
    app.state.store.close().await;
    let response = app.get("/api/health", Auth::None).await;
    assert_eq!(response.status, 503);
    assert_eq!(response.body["status"], "degraded");
    assert!(
        response.body["database"]
            .as_str()
            .expect("database")
            .starts_with("unavailable")
    );
}

#[tokio::test]
async fn openapi_document_lists_every_endpoint() {
    let app = TestApp::spawn().await;
    let response = app.get("/api/openapi.json", Auth::None).await;
    assert_eq!(response.status, 200);
    assert!(
        response.body["openapi"]
            .as_str()
            .expect("version")
            .starts_with("3.")
    );
    let paths = response.body["paths"].as_object().expect("paths");
    for (path, method) in [
        ("/api/health", "get"),
        ("/api/auth/signup", "post"),
        ("/api/auth/login", "post"),
        ("/api/auth/logout", "post"),
        ("/api/auth/nonce", "post"),
        ("/api/auth/wallet", "post"),
        ("/api/account", "get"),
        ("/api/account", "patch"),
        ("/api/account/wallets", "post"),
        ("/api/account/tournaments", "get"),
        ("/api/account/payouts", "get"),
        ("/api/api-keys", "get"),
        ("/api/api-keys", "post"),
        ("/api/api-keys/{keyId}", "delete"),
        ("/api/tournaments", "get"),
        ("/api/tournaments/{id}", "get"),
        ("/api/tournaments/{id}/register", "post"),
        ("/api/tournaments/{id}/registration-memo", "get"),
        ("/api/tournaments/{id}/leaderboard", "get"),
        ("/api/tournaments/{id}/performance", "get"),
        ("/api/tournaments/{id}/live", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing from OpenAPI"
        );
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_answer_in_the_platform_error_form() {
    let app = TestApp::spawn().await;
    let missing = app.get("/api/nope", Auth::None).await;
    assert_eq!(missing.status, 404);
    assert!(missing.error().contains("/api/nope"));
    let wrong_method = app.delete("/api/health", Auth::None).await;
    assert_eq!(wrong_method.status, 405);
    assert!(wrong_method.error().contains("DELETE"));
}
