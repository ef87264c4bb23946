//! Operations: `GET /api/health` names the node, its roles and the database's state, and
//! `GET /metrics` counts requests by route template and status in the Prometheus text format.

use crucible::secret::Secret;
use serde_json::Value;

use crate::helpers::{Auth, TestApp};

async fn scrape(app: &TestApp, token: Option<&str>) -> (u16, String) {
    let mut request = app.client.get(format!("{}/metrics", app.address));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("scrape");
    let status = response.status().as_u16();
    (status, response.text().await.expect("text"))
}

#[tokio::test]
async fn health_names_the_node_its_roles_and_the_database() {
    let app = TestApp::spawn().await;
    let health = app.get("/api/health", Auth::None).await;
    assert_eq!(health.status, 200);
    let body: &Value = &health.body;
    assert_eq!(body["status"], "ok");
    assert_eq!(body["database"], "ok");
    let backend = if app.config.database_url.starts_with("postgres") {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(body["databaseBackend"], backend);
    assert!(body["databaseLatencyMs"].as_f64().expect("latency") >= 0.0);
    assert_eq!(body["node"], app.state.node_id.as_ref());
    // Tests run without the scheduler; on PostgreSQL the node relays events.
    let roles: Vec<&str> = body["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(roles.contains(&"relay"), backend == "postgres");
    assert!(!roles.contains(&"scheduler"));
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_status() {
    let app = TestApp::spawn().await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/tournaments", Auth::None).await.status, 200);
    }
    assert_eq!(
        app.get("/api/tournaments/trn_a", Auth::None).await.status,
        404
    );
    assert_eq!(
        app.get("/api/tournaments/trn_b", Auth::None).await.status,
        404
    );
    assert_eq!(app.get("/api/no/such/thing", Auth::None).await.status, 404);
    assert_eq!(app.get("/tournaments", Auth::None).await.status, 200);

    let (status, text) = scrape(&app, None).await;
    assert_eq!(status, 200, "{text}");
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(
        has(
            r#"crucible_http_requests_total{route="/api/tournaments",method="GET",status="200"} 3"#
        ),
        "{text}"
    );
    // Two ids, one series: counted by template, never by raw path.
    assert!(
        has(
            r#"crucible_http_requests_total{route="/api/tournaments/{id}",method="GET",status="404"} 2"#
        ),
        "{text}"
    );
    assert!(has(
        r#"crucible_http_requests_total{route="unmatched",method="GET",status="404"} 1"#
    ));
    // A page of the web app counts once, as itself, not as the API calls it makes.
    assert!(has(
        r#"crucible_http_requests_total{route="/tournaments",method="GET",status="200"} 1"#
    ));
    assert!(has(
        r#"crucible_http_request_duration_seconds_count{route="/api/tournaments",method="GET"} 3"#
    ));
    assert!(has(
        r#"crucible_http_request_duration_seconds_bucket{route="/api/tournaments",method="GET",le="+Inf"} 3"#
    ));
    assert!(!text.contains("trn_a"), "raw paths never become labels");
    for series in [
        r#"crucible_agent_ticks_total{outcome="ok"} 0"#,
        r#"crucible_webhook_deliveries_total{outcome="sent"} 0"#,
        r#"crucible_queue_depth{queue="jobs"}"#,
        r#"crucible_queue_depth{queue="webhooks"} 0"#,
        "crucible_sse_subscribers 0",
        // The list was read once and answered twice from memory.
        r#"crucible_read_cache_lookups_total{cache="public",outcome="hit"} 2"#,
        r#"crucible_read_cache_lookups_total{cache="keys",outcome="hit"} 0"#,
    ] {
        assert!(text.contains(series), "{series} in {text}");
    }
}

#[tokio::test]
async fn with_a_token_metrics_need_it() {
    let app = TestApp::spawn_with(|config| {
        config.metrics_token = Some(Secret::new("scrape-me-please".to_owned()));
    })
    .await;
    let (status, body) = scrape(&app, None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("CRUCIBLE_METRICS_TOKEN"), "{body}");
    assert_eq!(scrape(&app, Some("wrong")).await.0, 403);
    let (status, text) = scrape(&app, Some("scrape-me-please")).await;
    assert_eq!(status, 200);
    assert!(text.contains("# TYPE crucible_http_requests_total counter"));
}
