//! A read as an MCP tool call against the same read over REST, in one run: `tools/call
//! get_tournament` and `get_tournament_leaderboard` (stateless 2026-07-28 requests, each a POST
//! of JSON-RPC that the MCP service answers by calling the REST route in process) against
//! `GET /api/tournaments/{id}` and its leaderboard page with the same account key, and both
//! against the router's floor (an unknown path); MCP `resources/list` (one fixed resource, no REST call) shows what the protocol itself
//! costs before any tool runs.
//!
//! The server runs on one core (a current-thread runtime, pinned to CPU 0 when `taskset`
//! exists) and `wrk` loads it from the other core. Rate limits are off, as in read_paths.
//!
//! `cargo bench --bench mcp_reads` (SQLite); with `TEST_DATABASE_URL=postgres://…` on
//! PostgreSQL. Needs `wrk`. `BENCH_SECONDS` (default 10), `BENCH_CONCURRENCY` (64),
//! `BENCH_WALLETS` (1,000) and `BENCH_ROUNDS` (3) tune it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use serde_json::json;
use support::env_number;
use support::wrk::{self, Load, pin_to_cpu};

/// A wrk script that POSTs `body` (JSON-RPC) to the MCP endpoint.
fn post_script(dir: &std::path::Path, name: &str, body: &serde_json::Value) -> std::path::PathBuf {
    let path = dir.join(format!("{name}.lua"));
    let script = format!(
        "wrk.method = \"POST\"\nwrk.body = [[{}]]\nwrk.headers[\"Content-Type\"] = \"application/json\"\n",
        body
    );
    std::fs::write(&path, script).expect("write the wrk script");
    path
}

/// `tools/call` of `tool` with `arguments`, as a 2026-07-28 client sends it (no session).
fn tool_call(tool: &str, arguments: serde_json::Value) -> serde_json::Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
}

fn main() {
    let seconds = env_number("BENCH_SECONDS", 10);
    let concurrency = env_number("BENCH_CONCURRENCY", 64);
    let wallets = env_number("BENCH_WALLETS", 1_000) as usize;
    if !wrk::available("mcp_reads") {
        std::process::exit(2);
    }
    let pinned = pin_to_cpu(0);
    let server = support::serve_on_one_core();
    let (base, state, backend) = server.parts();
    let runtime = support::runtime();
    let key = support::seed_reads(&runtime, &state, &base, wallets);
    let scripts = tempfile::tempdir().expect("tempdir");
    let detail = post_script(
        scripts.path(),
        "detail",
        &tool_call("get_tournament", json!({"tournamentId": "trn_bench"})),
    );
    let board = post_script(
        scripts.path(),
        "board",
        &tool_call(
            "get_tournament_leaderboard",
            json!({"tournamentId": "trn_bench", "page": 1, "pageSize": 20}),
        ),
    );
    let ping = post_script(
        scripts.path(),
        "ping",
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}),
    );
    let auth = format!("Authorization: Bearer {key}");
    let mcp_headers = [
        auth.as_str(),
        "Accept: application/json, text/event-stream",
        "MCP-Protocol-Version: 2026-07-28",
        "Mcp-Method: tools/call",
    ];
    let detail_headers = [
        mcp_headers[0],
        mcp_headers[1],
        mcp_headers[2],
        mcp_headers[3],
        "Mcp-Name: get_tournament",
    ];
    let board_headers = [
        mcp_headers[0],
        mcp_headers[1],
        mcp_headers[2],
        mcp_headers[3],
        "Mcp-Name: get_tournament_leaderboard",
    ];
    let ping_headers = [
        mcp_headers[0],
        mcp_headers[1],
        mcp_headers[2],
        "Mcp-Method: resources/list",
    ];
    let rest_headers = [auth.as_str()];
    let floor = format!("{base}/api/no-such-path");
    let rest_detail = format!("{base}/api/tournaments/trn_bench");
    let rest_board = format!("{base}/api/tournaments/trn_bench/leaderboard?page=1&pageSize=20");
    let mcp = format!("{base}/mcp");

    // Each load answers what it should before it is measured.
    runtime.block_on(async {
        let client = reqwest::Client::new();
        for (tool, body) in [
            (
                "get_tournament",
                tool_call("get_tournament", json!({"tournamentId": "trn_bench"})),
            ),
            (
                "get_tournament_leaderboard",
                tool_call(
                    "get_tournament_leaderboard",
                    json!({"tournamentId": "trn_bench", "page": 1, "pageSize": 20}),
                ),
            ),
        ] {
            let answer: serde_json::Value = client
                .post(&mcp)
                .header("authorization", format!("Bearer {key}"))
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", tool)
                .json(&body)
                .send()
                .await
                .expect("tool call")
                .json()
                .await
                .expect("json");
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        }
    });

    let loads = [
        (
            "unknown path (floor)",
            Load {
                url: &floor,
                headers: &[],
                script: None,
                prepare: None,
            },
        ),
        (
            "MCP resources/list (no REST call)",
            Load {
                url: &mcp,
                headers: &ping_headers,
                script: Some(&ping),
                prepare: None,
            },
        ),
        (
            "REST GET /api/tournaments/{id}",
            Load {
                url: &rest_detail,
                headers: &rest_headers,
                script: None,
                prepare: None,
            },
        ),
        (
            "MCP tools/call get_tournament",
            Load {
                url: &mcp,
                headers: &detail_headers,
                script: Some(&detail),
                prepare: None,
            },
        ),
        (
            "REST GET leaderboard page (20)",
            Load {
                url: &rest_board,
                headers: &rest_headers,
                script: None,
                prepare: None,
            },
        ),
        (
            "MCP tools/call get_tournament_leaderboard",
            Load {
                url: &mcp,
                headers: &board_headers,
                script: Some(&board),
                prepare: None,
            },
        ),
    ];
    println!(
        "MCP reads against REST, {backend}, server on 1 core{}, wrk -c{concurrency} -d{seconds}s from another core:",
        if pinned { " (pinned)" } else { "" }
    );
    wrk::against_the_floor(&loads, concurrency, seconds, env_number("BENCH_ROUNDS", 3));
}
