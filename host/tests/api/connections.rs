//! Connections a client can abuse: a slow or silent client is cut off once the header-read
//! timeout passes, event streams are capped per client and per node while they are open, and a
//! shutdown closes open streams instead of waiting for clients that would never hang up. Each
//! test also shows an honest client served meanwhile.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use crucible::clock::ManualClock;
use crucible::config::Config;
use crucible::startup::Application;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{Auth, TestApp, fresh_database_url};

/// Read until the server closes the connection; how long that took.
async fn wait_for_close(stream: &mut tokio::net::TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut buffer = [0u8; 1024];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buffer)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn slow_and_silent_clients_are_cut_off_and_others_are_served() {
    let app = TestApp::spawn_with(|config| config.header_read_timeout_ms = 500).await;
    let address = app.address.trim_start_matches("http://").to_owned();
    let mut silent = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    let mut slow = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    slow.write_all(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-A: ")
        .await
        .expect("write");
    let dribble = tokio::spawn(async move {
        // One byte every 100 ms: the headers never end.
        for _ in 0..30 {
            if slow.write_all(b"a").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        slow
    });
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
    let closed = wait_for_close(&mut silent, Duration::from_secs(5)).await;
    assert!(closed.is_some(), "a silent connection is closed");
    let mut slow = dribble.await.expect("join");
    assert!(
        wait_for_close(&mut slow, Duration::from_secs(1))
            .await
            .is_some(),
        "a connection dribbling its headers is closed"
    );
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
}

#[tokio::test]
async fn open_streams_are_capped_per_client_and_per_node() {
    let app = TestApp::spawn_with(|config| {
        config.max_streams_per_client = 2;
        config.max_streams = 3;
        config.trusted_proxies = 1;
    })
    .await;
    app.create_tournament(app.new_tournament("trn_cap", 0, 10, -chrono::Duration::minutes(1), 2))
        .await;
    let open = |client: &'static str| {
        app.client
            .get(format!("{}/api/tournaments/trn_cap/live", app.address))
            .header("x-forwarded-for", client)
            .send()
    };
    let first = open("203.0.113.1").await.expect("open");
    let second = open("203.0.113.1").await.expect("open");
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = open("203.0.113.1").await.expect("open");
    assert_eq!(third.status(), 429);
    let body: serde_json::Value = third.json().await.expect("json");
    assert!(
        body["error"]
            .as_str()
            .expect("error")
            .contains("open streams"),
        "{body}"
    );
    assert!(body["retryAfter"].as_u64().is_some(), "{body}");

    let other = open("203.0.113.2").await.expect("open");
    assert_eq!(other.status(), 200, "another client is served");
    let full = open("203.0.113.3").await.expect("open");
    assert_eq!(full.status(), 503, "the node holds as many as it may");

    // Closing a stream gives its place back.
    drop(first);
    let client: std::net::IpAddr = "203.0.113.1".parse().expect("ip");
    for _ in 0..100 {
        if app.state.streams.count(Some(client)) < 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(open("203.0.113.1").await.expect("open").status(), 200);
    drop((second, other));
}

#[tokio::test]
async fn shutdown_closes_open_streams_and_returns() {
    let data_dir = tempfile::tempdir().expect("tempdir");
    let database_url = fresh_database_url(data_dir.path()).await;
    let config = Config::for_tests(data_dir.path().to_path_buf(), database_url.clone());
    let app = Application::build_with_clock(config, Arc::new(ManualClock::new(Utc::now())))
        .await
        .expect("build");
    let address = format!("http://{}", app.local_addr());
    let state = app.state().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async move {
        let _ = stopped.await;
    }));
    let id = "trn_shutdown";
    crucible::tournaments::queries::insert(
        &mut state.store.write().acquire().await.expect("conn"),
        &crucible::tournaments::queries::NewTournament {
            id: id.into(),
            name: "Shutdown".into(),
            description: String::new(),
            kind: "highest_pnl".into(),
            visibility: "public".into(),
            entry_fee_raw: 0,
            max_participants: 10,
            escrow_wallet: state.chain.escrow().address.as_str().to_owned(),
            payout_split: vec![100],
            rake_bps: 0,
            is_paper_trading: false,
            transfer_policy: crucible::tournaments::rules::TransferPolicy::Adjust,
            evaluation_metric: crucible::tournaments::rules::EvaluationMetric::PnlPercent,
            start_date: Utc::now() - chrono::Duration::minutes(1),
            end_date: Utc::now() + chrono::Duration::hours(1),
            series: None,
            registration_deadline: None,
            invite_code_hash: None,
            min_participants: 0,
        },
        Utc::now(),
    )
    .await
    .expect("insert");
    let response = reqwest::get(format!("{address}/api/tournaments/{id}/live"))
        .await
        .expect("open");
    assert_eq!(response.status(), 200);
    let mut response = response;
    let first = response.chunk().await.expect("bytes").expect("an event");
    assert!(String::from_utf8_lossy(&first).contains("leaderboard:update"));
    // The same stream over HTTP/2, on a connection that must be drained as well.
    let mut h2 = h2_connection(&address).await;
    let h2_response = h2
        .send_request(h2_get(&format!("/api/tournaments/{id}/live"), "127.0.0.1"))
        .await
        .expect("HTTP/2 stream");
    assert_eq!(h2_response.status(), 200);
    let mut h2_body = h2_response.into_body();

    // Work this node holds, and work another node holds.
    for (job, owner) in [
        ("job_mine", format!("{}:scheduler", state.node_id)),
        ("job_theirs", "node_other:scheduler".to_owned()),
    ] {
        sqlx::query(
            "INSERT INTO jobs (id, kind, subject, due_at, lease_owner, lease_until, created_at)
             VALUES ($1, 'tournament.end', 'trn_x', 0, $2, $3, 0)",
        )
        .bind(job)
        .bind(owner)
        .bind(i64::MAX / 2)
        .execute(state.store.write())
        .await
        .expect("job");
    }

    stop.send(()).expect("stop");
    let mut tail = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(bytes)) = response.chunk().await {
            tail.push_str(&String::from_utf8_lossy(&bytes));
        }
    })
    .await;
    assert!(ended.is_ok(), "the open stream was closed by the shutdown");
    assert!(
        tail.contains("retry: 2000"),
        "the last frame tells the client when to reconnect: {tail:?}"
    );
    let mut h2_tail = String::new();
    let h2_ended = tokio::time::timeout(Duration::from_secs(5), async {
        use http_body_util::BodyExt;
        while let Some(Ok(frame)) = h2_body.frame().await {
            if let Ok(data) = frame.into_data() {
                h2_tail.push_str(&String::from_utf8_lossy(&data));
            }
        }
    })
    .await;
    assert!(
        h2_ended.is_ok(),
        "the HTTP/2 stream was closed by the shutdown too"
    );
    assert!(
        h2_tail.contains("retry: 2000"),
        "and told when to reconnect: {h2_tail:?}"
    );
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server stopped")
        .expect("join")
        .expect("clean stop");

    // It gave its own leases back, and only those.
    let pool = sqlx::AnyPool::connect(&database_url).await.expect("reopen");
    let leases: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT id, lease_owner FROM jobs WHERE id LIKE 'job_%' ORDER BY id")
            .fetch_all(&pool)
            .await
            .expect("jobs");
    assert_eq!(
        leases,
        vec![
            ("job_mine".to_owned(), None),
            (
                "job_theirs".to_owned(),
                Some("node_other:scheduler".to_owned())
            ),
        ]
    );
}

/// An HTTP/2 connection (prior knowledge, as a proxy speaks to its upstream) to `address`.
async fn h2_connection(
    address: &str,
) -> hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>> {
    h2_connection_watched(address).await.0
}

/// [`h2_connection`], and the task driving it, which ends when the server closes it.
async fn h2_connection_watched(
    address: &str,
) -> (
    hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>,
    tokio::task::JoinHandle<Result<(), hyper::Error>>,
) {
    let stream = tokio::net::TcpStream::connect(address.trim_start_matches("http://"))
        .await
        .expect("connect");
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("HTTP/2 handshake");
    (sender, tokio::spawn(connection))
}

fn h2_get(path: &str, client: &str) -> hyper::Request<http_body_util::Empty<bytes::Bytes>> {
    hyper::Request::get(format!("http://bench{path}"))
        .header("x-forwarded-for", client)
        .body(http_body_util::Empty::new())
        .expect("request")
}

#[tokio::test]
async fn one_http2_connection_carries_many_event_streams_and_requests_within_the_caps() {
    use http_body_util::BodyExt;

    let app = TestApp::spawn_with(|config| {
        config.max_streams_per_client = 3;
        config.trusted_proxies = 1;
    })
    .await;
    app.create_tournament(app.new_tournament("trn_h2", 0, 10, -chrono::Duration::minutes(1), 2))
        .await;
    let mut sender = h2_connection(&app.address).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        sender.ready().await.expect("ready");
        let response = sender
            .send_request(h2_get("/api/tournaments/trn_h2/live", "203.0.113.7"))
            .await
            .expect("response");
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), hyper::Version::HTTP_2);
        let mut body = response.into_body();
        let first = body
            .frame()
            .await
            .expect("a frame")
            .expect("data")
            .into_data()
            .expect("data frame");
        assert!(
            String::from_utf8_lossy(&first).contains("leaderboard:update"),
            "each stream starts with the board"
        );
        streams.push(body);
    }
    assert_eq!(
        app.state.streams.count(None),
        3,
        "three streams open on one socket"
    );
    // The client's cap counts streams, not sockets.
    let fourth = sender
        .send_request(h2_get("/api/tournaments/trn_h2/live", "203.0.113.7"))
        .await
        .expect("response");
    assert_eq!(fourth.status(), 429);
    // The same connection still answers ordinary requests while its streams are open.
    let health = sender
        .send_request(h2_get("/api/health", "203.0.113.7"))
        .await
        .expect("response");
    assert_eq!(health.status(), 200);
    let body = health.into_body().collect().await.expect("body").to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert!(body.get("status").is_some(), "{body}");
    // Ending a stream (a reset, as a closed browser tab sends) gives its place back.
    drop(streams.pop());
    for _ in 0..100 {
        if app.state.streams.count(None) < 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(app.state.streams.count(None), 2);
    let again = sender
        .send_request(h2_get("/api/tournaments/trn_h2/live", "203.0.113.7"))
        .await
        .expect("response");
    assert_eq!(again.status(), 200);
    // HTTP/1.1 on another socket is served as before.
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
}

#[tokio::test]
async fn a_client_that_stops_inside_the_http2_preface_is_cut_off() {
    let app = TestApp::spawn_with(|config| config.header_read_timeout_ms = 500).await;
    let mut stalled = tokio::net::TcpStream::connect(app.address.trim_start_matches("http://"))
        .await
        .expect("connect");
    stalled
        .write_all(b"PRI * HTTP/2.0\r\n")
        .await
        .expect("write");
    let closed = wait_for_close(&mut stalled, Duration::from_secs(5)).await;
    assert!(
        closed.is_some_and(|after| after >= Duration::from_millis(400)),
        "closed once the header timeout passed: {closed:?}"
    );
    assert_eq!(app.get("/api/health", Auth::None).await.status, 200);
}

#[tokio::test]
async fn an_http2_connection_with_nothing_in_flight_is_closed_after_the_header_timeout() {
    let app = TestApp::spawn_with(|config| config.header_read_timeout_ms = 500).await;
    app.create_tournament(app.new_tournament("trn_idle", 0, 10, -chrono::Duration::minutes(1), 2))
        .await;
    let (_quiet, quiet_ended) = h2_connection_watched(&app.address).await;
    let (mut busy, busy_ended) = h2_connection_watched(&app.address).await;
    let stream = busy
        .send_request(h2_get("/api/tournaments/trn_idle/live", "127.0.0.1"))
        .await
        .expect("stream");
    assert_eq!(stream.status(), 200);
    let started = Instant::now();
    let quiet = tokio::time::timeout(Duration::from_secs(5), quiet_ended).await;
    assert!(
        quiet.is_ok(),
        "a connection that asks nothing is closed once the header timeout passes"
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
    // Three timeouts on, the connection whose event stream is open is still served.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        !busy_ended.is_finished(),
        "an open stream keeps its connection"
    );
    let health = busy
        .send_request(h2_get("/api/health", "127.0.0.1"))
        .await
        .expect("still answering");
    assert_eq!(health.status(), 200);
    drop(stream);
}
