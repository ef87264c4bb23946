//! `/mcp`, the Model Context Protocol endpoint.
//!
//! Two kinds of tests:
//! - the gate and the protocol spoken by hand over the real socket (JSON-RPC in `reqwest`): keys,
//!   Host and Origin, sessions of another account, refusals as tool errors, size limits;
//! - an agent's whole day with the official MCP Python SDK as the client
//!   (`host/tests/mcp-client/play.py`), ignored by default because they need `pip install mcp`;
//!   CI runs them (`cargo test -p crucible --test api mcp_sdk -- --ignored`). `MCP_PYTHON` names
//!   the interpreter (default `python3`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp};

const EMAIL: &str = "agent@example.com";

/// A session (cookie), its account's embedded wallet, and an account key with `scopes`.
async fn operator(app: &TestApp, email: &str, key: Value) -> (String, String, String) {
    let signed_up = app.signup(email).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    let session = signed_up.session_token();
    let embedded = signed_up.body["allChainWallets"][0]
        .as_str()
        .expect("embedded wallet")
        .to_owned();
    let created = app.create_key(&session, key).await;
    let secret = created["key"].as_str().expect("key").to_owned();
    (session, embedded, secret)
}

/// One JSON-RPC request to `/mcp` as `key`, in a 2025-era session when `session` is given.
async fn rpc(
    app: &TestApp,
    key: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("authorization", format!("Bearer {key}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    (status, headers, parse_rpc_body(&text))
}

/// A JSON answer, or the last `data:` of an SSE answer.
fn parse_rpc_body(text: &str) -> Value {
    if let Ok(value) = serde_json::from_str(text) {
        return value;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .rfind(|message| message.get("id").is_some())
        .unwrap_or(Value::Null)
}

/// `initialize` + `notifications/initialized`; the session id.
async fn open_session(app: &TestApp, key: &str) -> String {
    let (status, headers, body) = rpc(
        app,
        key,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "crucible", "{body}");
    let session = headers["mcp-session-id"]
        .to_str()
        .expect("session id")
        .to_owned();
    let (status, _, _) = rpc(
        app,
        key,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    session
}

async fn call_tool(app: &TestApp, key: &str, session: &str, name: &str, arguments: Value) -> Value {
    let (status, _, body) = rpc(
        app,
        key,
        Some(session),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

#[tokio::test]
async fn without_a_good_key_the_answer_is_401_with_a_bearer_challenge() {
    let app = TestApp::spawn().await;
    let url = format!("{}/mcp", app.address);
    let none = app
        .client
        .post(&url)
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(none.status(), 401);
    assert_eq!(
        none.headers()["www-authenticate"],
        "Bearer realm=\"crucible-mcp\""
    );
    let body: Value = none.json().await.expect("json");
    assert!(
        body["error"].as_str().expect("error").contains("Bearer"),
        "{body}"
    );

    let bad = app
        .client
        .post(&url)
        .header("authorization", "Bearer svc_live_not_a_key_at_all")
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(bad.status(), 401);
    assert_eq!(
        bad.headers()["www-authenticate"],
        "Bearer realm=\"crucible-mcp\", error=\"invalid_token\""
    );
    // A revoked key is refused from the next request on.
    let (session, _, key) = operator(&app, EMAIL, json!({"name": "a", "scopes": ["read"]})).await;
    open_session(&app, &key).await;
    let keys = app.get("/api/api-keys", Auth::Session(&session)).await;
    let key_id = keys.body["keys"][0]["keyId"]
        .as_str()
        .expect("keyId")
        .to_owned();
    let revoked = app
        .delete(&format!("/api/api-keys/{key_id}"), Auth::Session(&session))
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    let (status, _, _) = rpc(
        &app,
        &key,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn another_host_or_a_foreign_origin_is_refused_before_the_key_is_read() {
    let app = TestApp::spawn().await;
    let (_, _, key) = operator(&app, EMAIL, json!({"name": "a", "scopes": ["read"]})).await;
    let url = format!("{}/mcp", app.address);
    let rebinding = app
        .client
        .post(&url)
        .header("host", "attacker.example")
        .header("authorization", format!("Bearer {key}"))
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(rebinding.status(), 403);
    let body: Value = rebinding.json().await.expect("json");
    assert!(
        body["error"]
            .as_str()
            .expect("error")
            .contains("attacker.example"),
        "{body}"
    );

    let page = app
        .client
        .post(&url)
        .header("origin", "https://evil.example")
        .header("authorization", format!("Bearer {key}"))
        .json(&json!({}))
        .send()
        .await
        .expect("send");
    assert_eq!(page.status(), 403);
}

#[tokio::test]
async fn a_session_belongs_to_the_account_that_opened_it() {
    let app = TestApp::spawn().await;
    let (_, _, mine) = operator(&app, EMAIL, json!({"name": "a", "scopes": ["read"]})).await;
    let (_, _, theirs) = operator(
        &app,
        "other@example.com",
        json!({"name": "b", "scopes": ["read"]}),
    )
    .await;
    let session = open_session(&app, &mine).await;
    let (status, _, body) = rpc(
        &app,
        &theirs,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert!(
        body["error"]
            .as_str()
            .expect("error")
            .contains("no MCP session")
    );
    // Its owner still uses it, and ends it.
    let (status, _, body) = rpc(
        &app,
        &mine,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let ended = app
        .client
        .delete(format!("{}/mcp", app.address))
        .header("authorization", format!("Bearer {mine}"))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("send");
    assert_eq!(ended.status(), 204);
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM mcp_sessions WHERE id = $1")
        .bind(&session)
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
    assert_eq!(count, 0, "the stored session is forgotten");
}

#[tokio::test]
async fn tools_refuse_what_rest_refuses_with_the_apis_own_message() {
    let app = TestApp::spawn().await;
    let (_, wallet, key) = operator(&app, EMAIL, json!({"name": "a", "scopes": ["read"]})).await;
    app.create_tournament(app.new_tournament("free", 0, 10, chrono::Duration::hours(1), 2))
        .await;
    let session = open_session(&app, &key).await;

    let (_, _, listed) = rpc(
        &app,
        &key,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    assert!(names.contains(&"register_for_tournament"), "{names:?}");
    assert!(
        !names.contains(&"create_agent"),
        "agent tools need a v1 key: {names:?}"
    );

    // A read-only key cannot register: the REST call's 403, as a tool error.
    let refused = call_tool(
        &app,
        &key,
        &session,
        "register_for_tournament",
        json!({"tournamentId": "free", "registeredWallet": wallet, "txSignature": null}),
    )
    .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["content"][0]["text"],
        "this API key lacks the `write` scope"
    );
    assert_eq!(refused["structuredContent"]["status"], 403);
    let entries: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM tournament_registrations")
        .fetch_one(app.state.store.read())
        .await
        .expect("count");
    assert_eq!(entries.0, 0);

    // Unknown arguments and tools, and a bad id, are tool errors too, never protocol errors.
    let junk = call_tool(
        &app,
        &key,
        &session,
        "get_tournament",
        json!({"colour": "red"}),
    )
    .await;
    assert_eq!(junk["isError"], true);
    assert!(
        junk["content"][0]["text"]
            .as_str()
            .expect("text")
            .contains("`colour`")
    );
    let missing = call_tool(
        &app,
        &key,
        &session,
        "get_tournament",
        json!({"tournamentId": "nope"}),
    )
    .await;
    assert_eq!(missing["content"][0]["text"], "no tournament `nope`");
    assert_eq!(missing["structuredContent"]["status"], 404);
    let nothing = call_tool(&app, &key, &session, "launch_rockets", json!({})).await;
    assert_eq!(nothing["isError"], true);

    // What the key may do works, and answers the API's JSON.
    let board = call_tool(
        &app,
        &key,
        &session,
        "get_tournament",
        json!({"tournamentId": "free"}),
    )
    .await;
    assert_eq!(board["isError"], false, "{board}");
    let text: Value =
        serde_json::from_str(board["content"][0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(text["id"], "free");
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_and_the_server_answers_no_5xx_to_junk() {
    let app = TestApp::spawn().await;
    let (_, _, key) = operator(&app, EMAIL, json!({"name": "a", "scopes": ["read"]})).await;
    let huge = "x".repeat(2 * 1024 * 1024);
    let response = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("authorization", format!("Bearer {key}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{huge}\"}}}}"
        ))
        .send()
        .await
        .expect("send");
    assert_eq!(response.status(), 413);
    for junk in [
        "",
        "{",
        "[]",
        "{\"jsonrpc\":\"2.0\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":7}}",
    ] {
        let response = app
            .client
            .post(format!("{}/mcp", app.address))
            .header("authorization", format!("Bearer {key}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(junk)
            .send()
            .await
            .expect("send");
        assert!(
            response.status().as_u16() < 500,
            "{junk}: {}",
            response.status()
        );
    }
}

#[tokio::test]
async fn a_subscribed_run_is_announced_on_the_sessions_stream_when_it_moves() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player(EMAIL, 41, 5_000_000).await;
    let run = app.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("runId").to_owned();
    let run_key = run["registrationKey"].as_str().expect("key").to_owned();
    let session = open_session(&app, &player.key).await;
    let uri = format!("crucible://dungeon/runs/{run_id}");
    let (status, _, body) = rpc(
        &app,
        &player.key,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/subscribe", "params": {"uri": uri}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.get("error").is_none(), "{body}");
    // A resource nobody can read is refused.
    let (_, _, unknown) = rpc(
        &app,
        &player.key,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/subscribe",
               "params": {"uri": "crucible://dungeon/runs/run_nope"}}),
    )
    .await;
    assert!(unknown["error"]["message"].as_str().is_some(), "{unknown}");

    let mut stream = app
        .client
        .get(format!("{}/mcp", app.address))
        .header("authorization", format!("Bearer {}", player.key))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), 200);
    let turn = app
        .dungeon_turn(
            &run_id,
            &run_key,
            json!({"action": "inventory", "turnNumber": 1}),
        )
        .await;
    assert_eq!(turn.status, 200, "{}", turn.body);
    let mut seen = String::new();
    let announced = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(chunk) = stream.chunk().await.expect("chunk") {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("notifications/resources/updated") {
                return;
            }
        }
    })
    .await;
    assert!(announced.is_ok(), "no notification within 5 s: {seen}");
    assert!(seen.contains(&uri), "{seen}");
}

// --- The official MCP Python SDK as the client -------------------------------------------------

fn python() -> String {
    std::env::var("MCP_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Run one scenario of play.py; its JSON answer.
async fn sdk(scenario: &str, url: &str, key: &str, args: Value) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp-client/play.py");
    let mut command = std::process::Command::new(python());
    command
        .arg(script)
        .arg(scenario)
        .arg(url)
        .arg(key)
        .arg(args.to_string());
    let output = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("the scenario ends within 5 minutes")
    .expect("joins")
    .expect("python runs (pip install mcp)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{scenario} failed:\n{stdout}\n{stderr}"
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("{scenario} printed no JSON ({error}):\n{stdout}\n{stderr}"))
}

#[tokio::test]
#[ignore = "needs the MCP Python SDK (pip install mcp); CI runs it"]
async fn mcp_sdk_an_agent_plays_todays_dungeon_to_its_end_paying_from_the_embedded_wallet() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let (_, embedded, key) = operator(
        &app,
        EMAIL,
        json!({"name": "agent", "scopes": ["read", "write"],
               "spend": {"maxUsdcPerDay": 5, "maxUsdcPerEntry": 2}}),
    )
    .await;
    app.airdrop(&embedded, 1_000_000_000, 3_000_000).await;
    let url = format!("{}/mcp", app.address);

    let tools = sdk("tools", &url, &key, json!({})).await;
    assert_eq!(tools["protocol"], "2026-07-28", "{tools}");
    for tool in [
        "get_dungeon",
        "quote_dungeon_entry",
        "enter_dungeon",
        "take_dungeon_turn",
    ] {
        assert!(
            tools["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .any(|t| t == tool),
            "{tool} in {tools}"
        );
    }

    let played = sdk("dungeon", &url, &key, json!({"class": "fighter"})).await;
    assert_eq!(played["dungeonId"], app.dungeon_today());
    assert_ne!(played["status"], "active", "{played}");
    assert!(played["turns"].as_u64().expect("turns") > 1, "{played}");
    assert!(
        played["updates"].as_u64().expect("updates") >= 1,
        "{played}"
    );
    assert_eq!(played["resourceStatus"], played["status"]);
    assert!(played["events"].as_u64().expect("events") > 0);
    // Exactly the quoted price left the embedded wallet (1 USDC).
    assert_eq!(played["usdcBefore"], "3000000");
    assert_eq!(played["usdcAfter"], "2000000");
    let run_id = played["runId"].as_str().expect("runId");
    let (status,): (String,) = sqlx::query_as("SELECT status FROM dungeon_runs WHERE id = $1")
        .bind(run_id)
        .fetch_one(app.state.store.read())
        .await
        .expect("run");
    assert_ne!(status, "active");
}

#[tokio::test]
#[ignore = "needs the MCP Python SDK (pip install mcp); CI runs it"]
async fn mcp_sdk_registers_a_wallet_for_a_free_tournament_and_a_read_only_key_is_refused() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("free", 0, 10, chrono::Duration::hours(1), 2))
        .await;
    let url = format!("{}/mcp", app.address);
    let (session, embedded, key) = operator(
        &app,
        EMAIL,
        json!({"name": "rw", "scopes": ["read", "write"]}),
    )
    .await;
    let read_only = app
        .create_key(&session, json!({"name": "ro", "scopes": ["read"]}))
        .await["key"]
        .as_str()
        .expect("key")
        .to_owned();

    let refused = sdk(
        "register",
        &url,
        &read_only,
        json!({"tournamentId": "free", "wallet": embedded}),
    )
    .await;
    assert_eq!(refused["ok"], false);
    assert_eq!(refused["error"], "this API key lacks the `write` scope");

    let registered = sdk(
        "register",
        &url,
        &key,
        json!({"tournamentId": "free", "wallet": embedded}),
    )
    .await;
    assert_eq!(registered["ok"], true, "{registered}");
    let board = app
        .get("/api/tournaments/free/leaderboard", Auth::None)
        .await;
    assert!(board.body.to_string().contains(&embedded), "{}", board.body);
}

#[tokio::test]
#[ignore = "needs the MCP Python SDK (pip install mcp); CI runs it"]
async fn mcp_sdk_creates_and_starts_an_agent_with_a_v1_key() {
    let app = TestApp::spawn().await;
    let url = format!("{}/mcp", app.address);
    let session = app.session(EMAIL).await;
    let key = app.v1_key(&session).await;
    let agent = json!({
        "name": "Agent Smith", "username": "smith", "class": "fighter", "modelId": "openai/gpt-4o",
        "strategy": {"type": "builtin", "tokenPair": {"base": "SOL", "quote": "USDC"},
                     "timeInterval": "5m"}
    });
    let created = sdk("create_agent", &url, &key, json!({"agent": agent})).await;
    let agent_id = created["agentId"].as_str().expect("agentId").to_owned();
    let wallet = created["walletAddress"].as_str().expect("wallet");
    app.airdrop(wallet, 50_000_000, 0).await;
    let started = sdk("start_agent", &url, &key, json!({"agentId": agent_id})).await;
    assert_eq!(started["agent"]["data"]["status"], "active", "{started}");
    assert!(started["listed"].to_string().contains(&agent_id));

    // A key with agents:read only is refused where REST refuses it.
    let reader = app.v1_key_with(&session, &["agents:read"], None).await["key"]
        .as_str()
        .expect("key")
        .to_owned();
    let refused = sdk(
        "refused",
        &url,
        &reader,
        json!({"tool": "stop_agent", "arguments": {"agentId": agent_id}}),
    )
    .await;
    assert_eq!(refused["refused"], true, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .expect("error")
            .contains("agents:stop"),
        "{refused}"
    );
}

/// A load balancer that sends each request to the next node in turn; how many each got.
async fn round_robin(nodes: Vec<String>) -> (String, Arc<Vec<AtomicUsize>>) {
    use axum::body::Body;
    use axum::extract::Request;
    use axum::response::Response;
    let counts: Arc<Vec<AtomicUsize>> =
        Arc::new(nodes.iter().map(|_| AtomicUsize::new(0)).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let client = reqwest::Client::new();
    let seen = counts.clone();
    let app = axum::Router::new().fallback(move |request: Request| {
        let (nodes, next, client, seen) =
            (nodes.clone(), next.clone(), client.clone(), seen.clone());
        async move {
            let index = next.fetch_add(1, Ordering::SeqCst) % nodes.len();
            seen[index].fetch_add(1, Ordering::SeqCst);
            let (parts, body) = request.into_parts();
            let url = format!(
                "{}{}",
                nodes[index],
                parts.uri.path_and_query().map_or("/", |p| p.as_str())
            );
            let body = axum::body::to_bytes(body, 4 << 20)
                .await
                .unwrap_or_default();
            let mut upstream = client.request(parts.method, url).body(body);
            for (name, value) in &parts.headers {
                if name != "host" && name != "content-length" {
                    upstream = upstream.header(name, value);
                }
            }
            let answer = upstream.send().await.expect("upstream");
            let mut response = Response::builder().status(answer.status());
            for (name, value) in answer.headers() {
                response = response.header(name, value);
            }
            let chunks = futures_util::stream::unfold(answer, |mut answer| async move {
                match answer.chunk().await {
                    Ok(Some(chunk)) => Some((Ok::<_, std::io::Error>(chunk), answer)),
                    _ => None,
                }
            });
            response.body(Body::from_stream(chunks)).expect("response")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{address}"), counts)
}

#[tokio::test]
#[ignore = "needs the MCP Python SDK (pip install mcp); CI runs it"]
async fn mcp_sdk_two_nodes_serve_one_session_alternately() {
    if !std::env::var("TEST_DATABASE_URL").is_ok_and(|url| url.starts_with("postgres")) {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    a.dungeon_noon();
    let player = a.dungeon_player(EMAIL, 42, 5_000_000).await;
    let run = a.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("runId");
    let (balancer, counts) = round_robin(vec![a.address.clone(), b.address.clone()]).await;
    let played = sdk(
        "session_play",
        &format!("{balancer}/mcp"),
        &player.key,
        json!({"runId": run_id, "maxTurns": 60}),
    )
    .await;
    assert_eq!(played["protocol"], "2025-11-25", "{played}");
    assert!(played["turns"].as_u64().expect("turns") > 1, "{played}");
    assert!(
        played["updates"].as_u64().expect("updates") >= 1,
        "{played}"
    );
    let (to_a, to_b) = (
        counts[0].load(Ordering::SeqCst),
        counts[1].load(Ordering::SeqCst),
    );
    assert!(
        to_a > 5 && to_b > 5,
        "both nodes served the session: {to_a} / {to_b}"
    );
}

#[tokio::test]
async fn a_tool_counts_against_the_rest_limit_of_its_operation() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    app.create_tournament(app.new_tournament("free", 0, 10, chrono::Duration::hours(1), 2))
        .await;
    let (_, wallet, key) = operator(
        &app,
        EMAIL,
        json!({"name": "rw", "scopes": ["read", "write"]}),
    )
    .await;
    let session = open_session(&app, &key).await;
    let body = json!({"registeredWallet": wallet, "txSignature": null});
    // Five registration requests a minute per client and tournament, REST and MCP together.
    for _ in 0..3 {
        let response = app
            .post(
                "/api/tournaments/free/register",
                Auth::Bearer(&key),
                body.clone(),
            )
            .await;
        assert!(matches!(response.status, 201 | 409), "{}", response.body);
    }
    let arguments =
        json!({"tournamentId": "free", "registeredWallet": wallet, "txSignature": null});
    for _ in 0..2 {
        let answer = call_tool(
            &app,
            &key,
            &session,
            "register_for_tournament",
            arguments.clone(),
        )
        .await;
        assert_eq!(answer["structuredContent"]["status"], 409, "{answer}");
    }
    let limited = call_tool(&app, &key, &session, "register_for_tournament", arguments).await;
    assert_eq!(limited["isError"], true, "{limited}");
    assert_eq!(limited["structuredContent"]["status"], 429, "{limited}");
}

#[tokio::test]
async fn the_keys_page_says_where_an_agent_connects() {
    let app = TestApp::spawn().await;
    let session = app.session(EMAIL).await;
    let page = app
        .client
        .get(format!("{}/keys", app.address))
        .header("cookie", format!("session-token={session}"))
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("html");
    let url = format!("{}/mcp", app.config.public_url.trim_end_matches('/'));
    assert!(
        html.contains(&format!("<code id=\"mcp-url\">{url}</code>")),
        "{html}"
    );
    assert!(
        html.contains("mcpServers"),
        "the configuration block is there"
    );
}
