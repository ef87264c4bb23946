//! Two nodes on one PostgreSQL database behave as one service: what one node takes (a
//! registration, a dungeon turn, a key revocation) is seen by streams and requests on the other,
//! and a node whose notification connection drops catches up. PostgreSQL only: on SQLite there
//! is one node, and these tests return at once.

use std::time::Duration as StdDuration;

use chrono::Duration;
use crucible::chain::Keypair;
use serde_json::json;

use crate::helpers::{Auth, TestApp, read_events, watch_to_end};

fn on_postgres() -> bool {
    std::env::var("TEST_DATABASE_URL").is_ok_and(|url| url.starts_with("postgres"))
}

async fn live_stream(node: &TestApp, tournament: &str) -> reqwest::Response {
    let response = node
        .client
        .get(format!(
            "{}/api/tournaments/{tournament}/live",
            node.address
        ))
        .send()
        .await
        .expect("connect");
    assert_eq!(response.status(), 200);
    response
}

async fn register(node: &TestApp, tournament: &str) {
    node.register_free(tournament, &Keypair::generate().pubkey().to_string())
        .await;
}

/// Registrations taken by `a` move the board streamed by `b`: the update must come from the
/// relay, well before the stream's 30 s timer.
async fn registration_reaches_the_other_node(a: &TestApp, b: &TestApp, tournament: &str) {
    let mut stream = live_stream(b, tournament).await;
    let mut buffer = String::new();
    let first = read_events(&mut stream, 1, &mut buffer).await;
    let before = first[0].1["totalEntries"].as_i64().expect("entries");
    register(a, tournament).await;
    let update = tokio::time::timeout(
        StdDuration::from_secs(2),
        read_events(&mut stream, 1, &mut buffer),
    )
    .await
    .expect("B's stream moves within 2 s of A's registration");
    assert_eq!(update[0].0, "leaderboard:update");
    assert_eq!(update[0].1["totalEntries"], before + 1);
}

#[tokio::test]
async fn a_registration_on_one_node_is_on_the_other_nodes_live_stream_within_two_seconds() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    a.create_tournament(a.new_tournament("trn_nodes", 0, 100, Duration::hours(1), 2))
        .await;
    registration_reaches_the_other_node(&a, &b, "trn_nodes").await;
    // And the other way round.
    registration_reaches_the_other_node(&b, &a, "trn_nodes").await;
}

#[tokio::test]
async fn a_node_that_loses_its_notification_connection_listens_again_and_catches_up() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    a.create_tournament(a.new_tournament("trn_drop", 0, 100, Duration::hours(1), 2))
        .await;
    let mut stream = live_stream(&b, "trn_drop").await;
    let mut buffer = String::new();
    read_events(&mut stream, 1, &mut buffer).await;

    // Cut every listening connection of this schema's channel (both nodes'), as a network
    // blip or a database failover would; a registration lands while they are gone.
    let channel = crucible::events::notify::channel(&a.state.store, "events")
        .await
        .expect("channel");
    let (cut,): (i64,) = sqlx::query_as(
        "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE query LIKE 'LISTEN %' AND query LIKE '%' || $1 || '%'",
    )
    .bind(&channel)
    .fetch_one(a.state.store.write())
    .await
    .expect("terminate listeners");
    assert_eq!(cut, 2, "one listening connection per node");
    register(&a, "trn_drop").await;

    // B listens again and re-reads: its stream shows the registration it never heard of.
    let update = tokio::time::timeout(
        StdDuration::from_secs(5),
        read_events(&mut stream, 1, &mut buffer),
    )
    .await
    .expect("B catches up after listening again");
    assert_eq!(update[0].1["totalEntries"], 1);
    // And hears the next registration live again.
    registration_reaches_the_other_node(&a, &b, "trn_drop").await;
}

#[tokio::test]
async fn a_dungeon_run_played_on_one_node_is_watched_live_on_the_other() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    a.dungeon_noon();
    let player = a.dungeon_player("nodes@example.com", 21, 5_000_000).await;
    let entered = a.dungeon_run(&player, "fighter").await;
    let run_id = entered["runId"].as_str().expect("run id").to_owned();
    let key = entered["registrationKey"].as_str().expect("key").to_owned();

    let watcher = b
        .client
        .get(format!("{}/api/dungeons/runs/{run_id}/watch", b.address))
        .header("authorization", format!("Bearer {key}"))
        .send()
        .await
        .expect("connect");
    assert_eq!(watcher.status(), 200);
    let (legal_turns, end) = a.dungeon_play_to_end(&run_id, &key).await;
    let events = tokio::time::timeout(StdDuration::from_secs(30), watch_to_end(watcher))
        .await
        .expect("B's watcher follows the run to its end");
    let ids: Vec<i64> = events.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=events.len() as i64).collect::<Vec<_>>());
    let (_, last_kind, last) = events.last().expect("events");
    assert_eq!(last_kind, "run:ended");
    assert_eq!(last["status"], end.status.as_str());
    let legal_watched = events
        .iter()
        .filter(|(_, kind, data)| kind == "run:turn" && data["legal"] == true)
        .count();
    assert_eq!(legal_watched, legal_turns);
}

#[tokio::test]
async fn turns_alternating_between_nodes_each_build_on_the_last() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    a.dungeon_noon();
    b.dungeon_noon();
    let player = a
        .dungeon_player("alternate@example.com", 22, 5_000_000)
        .await;
    let entered = a.dungeon_run(&player, "fighter").await;
    let run_id = entered["runId"].as_str().expect("run id").to_owned();
    let key = entered["registrationKey"].as_str().expect("key").to_owned();
    // Each node keeps the run's state from its own last turn; the other node's turn in between
    // must make it read the row again, or it would play on a state a turn old (and answer a
    // turn number it was not sent).
    for number in 1..=9_i64 {
        let node = if number % 3 == 0 { &a } else { &b };
        let turn = node
            .dungeon_turn(
                &run_id,
                &key,
                json!({"action": "inventory", "turnNumber": number}),
            )
            .await;
        assert_eq!(turn.status, 200, "{}", turn.body);
        assert_eq!(turn.body["turnNumber"], number, "{}", turn.body);
        assert_eq!(turn.body["replayed"], false);
    }
    let page = a
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    assert_eq!(page.body["events"].as_array().map(Vec::len), Some(9));
}

#[tokio::test]
async fn a_key_revoked_on_one_node_is_refused_on_the_other_within_a_second() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let (session, key) = a.account_with_key("revoke@example.com", &["read"]).await;
    assert_eq!(b.get("/api/account", Auth::Bearer(&key)).await.status, 200);
    let keys = a.get("/api/api-keys", Auth::Session(&session)).await;
    let id = keys.body["keys"][0]["keyId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", keys.body))
        .to_owned();
    let revoked = a
        .delete(&format!("/api/api-keys/{id}"), Auth::Session(&session))
        .await;
    assert!((200..300).contains(&revoked.status), "{}", revoked.body);
    tokio::time::sleep(StdDuration::from_secs(1)).await;
    assert_eq!(b.get("/api/account", Auth::Bearer(&key)).await.status, 401);
}

#[tokio::test]
async fn two_nodes_taking_transfers_at_once_keep_one_ledger_without_double_spends() {
    use crucible::chain::tx::{Message, Transaction, instructions};

    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let payer = Keypair::generate();
    let funds = 1_000_000_000u64;
    a.airdrop(&payer.pubkey().to_string(), funds, 0).await;
    let blockhash = a.latest_blockhash().await;

    // Twenty transfers of 0.1 SOL (+ 5,000 fee each) from a 1 SOL wallet, half sent to each
    // node at the same time: exactly nine are affordable (a tenth would overdraw).
    let amount = 100_000_000u64;
    let recipients: Vec<_> = (0..20).map(|_| Keypair::generate().pubkey()).collect();
    let sends = recipients.iter().enumerate().map(|(n, to)| {
        let node = if n % 2 == 0 { &a } else { &b };
        let ix = instructions::system_transfer(&payer.pubkey(), to, amount);
        let message = Message::new_legacy(&[ix], &payer.pubkey(), blockhash);
        let wire = Transaction::sign(message, &[payer.signing_key()])
            .expect("sign")
            .serialize()
            .expect("wire");
        let encoded = bs58::encode(wire).into_string();
        async move { node.rpc("sendTransaction", json!([encoded])).await }
    });
    let replies = futures_util::future::join_all(sends).await;
    let landed: Vec<String> = replies
        .iter()
        .filter_map(|reply| reply["result"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(landed.len(), 9, "{replies:?}");

    // Every lamport is accounted for, as either node reads it.
    for node in [&a, &b] {
        let payer_left = node
            .rpc_result("getBalance", json!([payer.pubkey().to_string()]))
            .await["value"]
            .as_u64()
            .expect("balance");
        let mut received = 0;
        for to in &recipients {
            received += node.rpc_result("getBalance", json!([to.to_string()])).await["value"]
                .as_u64()
                .expect("balance");
        }
        assert_eq!(received, 9 * amount);
        assert_eq!(payer_left, funds - 9 * (amount + 5_000));
    }
    // One slot each, all different: the transactions were executed one after another.
    let statuses = b.rpc_result("getSignatureStatuses", json!([landed])).await;
    let mut slots: Vec<u64> = statuses["value"]
        .as_array()
        .expect("statuses")
        .iter()
        .map(|s| s["slot"].as_u64().expect("slot"))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 9);
}

/// An operator's hourly agent, created, funded and started through `node`.
async fn started_agent(node: &TestApp, email: &str) -> (String, String) {
    let session = node.session(email).await;
    let key = node.v1_key(&session).await;
    let agent = node.create_agent(&key, "hourly", "fighter", "1h").await;
    let agent_id = node.fund_and_start(&key, &agent).await;
    (key, agent_id)
}

async fn ticks_of(node: &TestApp, key: &str, agent_id: &str) -> i64 {
    let response = node
        .get(
            &format!("/api/v1/public/agents/{agent_id}"),
            Auth::XApiKey(key),
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body["data"]["ticks"].as_i64().expect("ticks")
}

#[tokio::test]
async fn a_global_rate_limit_holds_across_both_nodes() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn_with(|config| config.rate_limits = true).await;
    let b = a.spawn_peer().await;

    // Registrations (10 a minute per client, exact): twelve attempts spread over both nodes,
    // interleaved, get exactly ten answers and two 429s, wherever they land.
    let mut statuses = Vec::new();
    for n in 0..12 {
        let node = if n % 2 == 0 { &a } else { &b };
        let response = node
            .post("/api/tournaments/trn_none/register", Auth::None, json!({}))
            .await;
        statuses.push(response.status);
    }
    assert_eq!(
        statuses.iter().filter(|status| **status == 429).count(),
        2,
        "{statuses:?}"
    );
    assert!(
        statuses[..10].iter().all(|status| *status != 429),
        "{statuses:?}"
    );

    // Tournament reads (120 a minute per client, gossiped): 100 on A, then B hears of them
    // and lets only the rest of the budget through.
    for _ in 0..100 {
        assert_eq!(a.get("/api/tournaments", Auth::None).await.status, 200);
    }
    tokio::time::sleep(StdDuration::from_millis(500)).await;
    let mut passed = 0;
    for _ in 0..30 {
        if b.get("/api/tournaments", Auth::None).await.status == 200 {
            passed += 1;
        }
    }
    assert_eq!(passed, 20, "B admits what is left of the service's budget");
    tokio::time::sleep(StdDuration::from_millis(500)).await;
    assert_eq!(a.get("/api/tournaments", Auth::None).await.status, 429);
}

#[tokio::test]
async fn an_agent_ticks_once_per_interval_when_both_nodes_schedule() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let (key, agent_id) = started_agent(&a, "both@example.com").await;
    for hour in 0..4 {
        let (on_a, on_b) = tokio::join!(a.run_scheduler(), b.run_scheduler());
        assert_eq!(
            on_a.agent_ticks.ticked + on_b.agent_ticks.ticked,
            1,
            "hour {hour}: one tick between the two nodes"
        );
        a.advance(Duration::hours(1));
    }
    assert_eq!(ticks_of(&b, &key, &agent_id).await, 4);
}

#[tokio::test]
async fn each_webhook_is_delivered_once_when_both_nodes_deliver() {
    use crate::helpers::webhooks::{deliver, emit, hooked};
    use crucible::webhooks::Event as Hook;

    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let hook = hooked(&a, &[], "/hooks").await;
    for n in 0..20 {
        emit(&a, &hook.account_id, Hook::AgentTrade, json!({"n": n})).await;
    }
    a.advance(Duration::seconds(3));
    let (on_a, on_b) = tokio::join!(deliver(&a), deliver(&b));
    assert_eq!(on_a + on_b, 20);
    let mut seen = hook.receiver.delivery_ids();
    assert_eq!(seen.len(), 20);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 20, "no delivery twice");
    assert_eq!(deliver(&b).await + deliver(&a).await, 0);
}

#[tokio::test]
async fn a_node_killed_mid_tick_leaves_the_tick_to_the_other_after_its_lease() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let (key, agent_id) = started_agent(&b, "killed@example.com").await;
    // A leased the agent's tick and died before storing anything, as a crash mid-tick leaves it.
    sqlx::query("UPDATE agents SET tick_lease_owner = $1, tick_lease_until = $2 WHERE id = $3")
        .bind(format!("{}:scheduler", a.state.node_id))
        .bind(crucible::clock::to_millis(
            a.state.now() + Duration::minutes(2),
        ))
        .bind(&agent_id)
        .execute(a.state.store.write())
        .await
        .expect("lease");
    a.kill().await;
    assert_eq!(
        b.run_scheduler().await.agent_ticks.ticked,
        0,
        "the lease holds"
    );
    b.advance(Duration::minutes(2));
    assert_eq!(
        b.run_scheduler().await.agent_ticks.ticked,
        1,
        "B takes it over"
    );
    assert_eq!(b.run_scheduler().await.agent_ticks.ticked, 0, "once");
    assert_eq!(ticks_of(&b, &key, &agent_id).await, 1);
}

/// `count` copies of `agent_id` (same account, class and ledger; handles `many_<n>`), each
/// asking `model_id`: rule-only copies are claimed by row locks, copies whose model may be
/// asked by a lease (docs/architecture.md, "A tick").
async fn copies_of(node: &TestApp, agent_id: &str, range: std::ops::Range<i64>, model_id: &str) {
    sqlx::query(
        "INSERT INTO agents (id, account_id, name, username, username_key, class, model_id,
                             strategy_type, base_token, quote_token, time_interval,
                             max_allocation, wallet_address, status, ledger, clock_origin_wall,
                             clock_origin_market, next_tick_at, started_at, created_at, updated_at)
         SELECT 'agt_many_' || lpad(n::text, 4, '0'), account_id, 'many ' || n, 'many_' || n,
                'many_' || n, class, $2, strategy_type, base_token, quote_token, time_interval,
                max_allocation, 'wmany' || n, status, ledger, clock_origin_wall,
                clock_origin_market, next_tick_at, started_at, created_at, updated_at
         FROM agents CROSS JOIN generate_series($3::bigint, $4::bigint) AS n WHERE agents.id = $1",
    )
    .bind(agent_id)
    .bind(model_id)
    .bind(range.start)
    .bind(range.end - 1)
    .execute(node.state.store.write())
    .await
    .expect("copies");
}

/// Agents (id order) and their tick counts.
async fn tick_counts(node: &TestApp) -> Vec<(String, i64)> {
    sqlx::query_as("SELECT id, ticks FROM agents ORDER BY id")
        .fetch_all(node.state.store.read())
        .await
        .expect("ticks")
}

/// Two nodes passing over many agents at once, batches claimed by row locks (agents whose model
/// cannot be asked) and by leases (those whose model may be: a served vendor, tokens left)
/// side by side: every agent ticks exactly once per interval, and no claim outlives its batch.
#[tokio::test]
async fn many_agents_tick_once_each_when_both_nodes_claim_by_locks_and_leases() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let (_, agent_id) = started_agent(&a, "many@example.com").await;
    // Ids sort the rule-only copies first: the first batches are locked, later ones leased,
    // one of them mixed (leased).
    copies_of(&a, &agent_id, 0..400, "unserved/rule").await;
    copies_of(&a, &agent_id, 400..700, "openai/gpt-test").await;
    for hour in 1..=3 {
        let (on_a, on_b) = tokio::join!(a.run_scheduler(), b.run_scheduler());
        assert_eq!(
            on_a.agent_ticks.ticked + on_b.agent_ticks.ticked,
            701,
            "hour {hour}: every agent once between the two nodes ({} on A, {} on B)",
            on_a.agent_ticks.ticked,
            on_b.agent_ticks.ticked
        );
        let counts = tick_counts(&a).await;
        assert_eq!(counts.len(), 701);
        assert!(
            counts.iter().all(|(_, ticks)| *ticks == hour),
            "hour {hour}: {:?}",
            counts.iter().find(|(_, ticks)| *ticks != hour)
        );
        let (held,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM agents WHERE tick_lease_owner IS NOT NULL")
                .fetch_one(a.state.store.read())
                .await
                .expect("held");
        assert_eq!(held, 0, "hour {hour}: every lease ended with its batch");
        a.advance(Duration::hours(1));
    }
}

/// A batch's row locks are its claim: another node's pass goes by the agents while the batch's
/// session holds them (a node mid-tick), and ticks them once that session ends — a node that
/// dies loses its locks with its connection, not the tick.
#[tokio::test]
async fn an_agent_locked_by_a_batch_is_passed_by_until_its_session_ends() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let (key, agent_id) = started_agent(&a, "locked@example.com").await;
    sqlx::query("UPDATE agents SET model_id = 'unserved/rule' WHERE id = $1")
        .bind(&agent_id)
        .execute(a.state.store.write())
        .await
        .expect("rule only");
    let mut batch = a.state.store.begin().await.expect("a batch's transaction");
    sqlx::query("SELECT id FROM agents WHERE id = $1 FOR NO KEY UPDATE")
        .bind(&agent_id)
        .fetch_one(&mut *batch)
        .await
        .expect("locked");
    assert_eq!(
        b.run_scheduler().await.agent_ticks.ticked,
        0,
        "the lock holds"
    );
    drop(batch);
    a.kill().await;
    assert_eq!(
        b.run_scheduler().await.agent_ticks.ticked,
        1,
        "B takes it over"
    );
    assert_eq!(b.run_scheduler().await.agent_ticks.ticked, 0, "once");
    assert_eq!(ticks_of(&b, &key, &agent_id).await, 1);
}

#[tokio::test]
async fn a_node_killed_mid_payout_leaves_it_to_the_other_which_pays_once() {
    use crate::payouts::{payout_row, pending_payout, transfers_to, usdc};

    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    let b = a.spawn_peer().await;
    let winner = pending_payout(&a, "pay_killed", 800_000).await;
    // A signs the transfer and records it, then dies before sending it.
    let recorded = crucible::tournaments::payouts::sign_and_record(a.state.payer(), "pay_killed")
        .await
        .expect("sign and record");
    a.kill().await;
    let held = crucible::tournaments::payouts::send(b.state.payer(), "pay_killed").await;
    assert!(format!("{:#}", held.expect_err("held")).contains("another worker"));
    b.advance(Duration::seconds(31));
    crucible::tournaments::payouts::send(b.state.payer(), "pay_killed")
        .await
        .expect("B pays");
    b.run_scheduler().await;
    let (status, signature, _) = payout_row(&b, "pay_killed").await;
    assert_eq!(status, "sent");
    assert_eq!(
        signature.as_deref(),
        Some(recorded.as_str()),
        "A's transfer, sent once"
    );
    assert_eq!(usdc(&b, &winner).await, 800_000);
    assert_eq!(transfers_to(&b, &winner).await, 1);
}

#[tokio::test]
async fn a_host_tool_writing_to_the_database_tells_the_running_nodes() {
    if !on_postgres() {
        return;
    }
    let a = TestApp::spawn().await;
    a.create_tournament(a.new_tournament("trn_tool", 0, 100, Duration::hours(1), 2))
        .await;
    let detail = "/api/tournaments/trn_tool";
    assert_eq!(a.get(detail, Auth::None).await.body["status"], "upcoming");
    // What `crucible tournament cancel` does from its own process: write, then tell the nodes.
    sqlx::query("UPDATE tournaments SET status = 'cancelled' WHERE id = 'trn_tool'")
        .execute(a.state.store.write())
        .await
        .expect("cancel");
    assert_eq!(
        a.get(detail, Auth::None).await.body["status"],
        "upcoming",
        "cached"
    );
    crucible::events::relay::tell_running_nodes(
        &a.state.store,
        vec![crucible::events::Event::TournamentEnded {
            tournament_id: "trn_tool".into(),
        }],
    )
    .await;
    let mut status = serde_json::Value::Null;
    for _ in 0..20 {
        status = a.get(detail, Auth::None).await.body["status"].clone();
        if status == "cancelled" {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(50)).await;
    }
    assert_eq!(status, "cancelled", "within a second, no clock moved");
}

/// Found by the partition fault test: a node cut off from the database in the middle of a
/// transaction kept its row locks (and with them the agents it had claimed) until TCP gave up,
/// about fifteen minutes later. Every session now tells PostgreSQL to end it once its node goes
/// silent (`db`, "Leases and fencing" in docs/operations.md).
#[tokio::test]
async fn every_postgres_session_ends_once_its_node_goes_silent() {
    if !on_postgres() {
        return;
    }
    let app = TestApp::spawn().await;
    let mut tx = app.state.store.begin().await.expect("a session");
    for (setting, expected) in [
        ("idle_in_transaction_session_timeout", "15s"),
        ("tcp_user_timeout", "15000"),
        ("tcp_keepalives_idle", "15"),
        ("tcp_keepalives_interval", "5"),
        ("tcp_keepalives_count", "3"),
    ] {
        let (value,): (String,) = sqlx::query_as(&format!("SHOW {setting}"))
            .fetch_one(&mut *tx)
            .await
            .expect("show");
        assert_eq!(value, expected, "{setting}");
    }
    tx.rollback().await.expect("rollback");
}
