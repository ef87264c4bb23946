//! The dungeon's durability and housekeeping: concurrent turns on one run are serialized and a
//! retried turn acts once, a restart loses nothing, idle runs are abandoned by the scheduler and
//! the day's best score is paid the pot from the dungeon wallet.

use crate::helpers::{Auth, TestApp};
use chrono::Duration;
use serde_json::json;

#[tokio::test]
async fn concurrent_turns_on_one_run_are_serialized_and_a_retried_turn_acts_once() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("c1@example.com", 61, 5_000_000).await;
    let run = app.dungeon_run(&player, "defender").await;
    let run_id = run["runId"].as_str().expect("run").to_owned();
    let key = run["registrationKey"].as_str().expect("key").to_owned();

    // Ten copies of turn 1 at once: one is played, the others get its stored answer.
    let same: Vec<_> = (0..10)
        .map(|_| app.dungeon_turn(&run_id, &key, json!({"action": "examine", "turnNumber": 1})))
        .collect();
    let answers = futures_util::future::join_all(same).await;
    for answer in &answers {
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.body["turnNumber"], 1);
        assert_eq!(answer.body["player"]["ap"], 99, "examine was charged once");
    }
    assert_eq!(
        answers
            .iter()
            .filter(|a| a.body["replayed"] == false)
            .count(),
        1
    );

    // Ten different free turns at once, without turn numbers: all played, one after another.
    let many: Vec<_> = (0..10)
        .map(|_| app.dungeon_turn(&run_id, &key, json!({"action": "inventory"})))
        .collect();
    let mut numbers: Vec<i64> = futures_util::future::join_all(many)
        .await
        .iter()
        .map(|a| {
            assert_eq!(a.status, 200, "{}", a.body);
            a.body["turnNumber"].as_i64().expect("number")
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (2..=11).collect::<Vec<_>>());
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    let seqs: Vec<i64> = page.body["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["seq"].as_i64().expect("seq"))
        .collect();
    assert_eq!(
        seqs,
        (1..=11).collect::<Vec<_>>(),
        "one event per turn, in order"
    );
}

#[tokio::test]
async fn a_node_plays_on_the_state_it_holds_until_another_writer_moves_the_run() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("cache@example.com", 63, 5_000_000).await;
    let run = app.dungeon_run(&player, "fighter").await;
    let run_id = run["runId"].as_str().expect("run").to_owned();
    let key = run["registrationKey"].as_str().expect("key").to_owned();
    let runs_cache = |app: &TestApp| {
        app.state
            .caches
            .stats()
            .into_iter()
            .find(|(name, _)| *name == "dungeon_runs")
            .map(|(_, counts)| counts)
            .expect("dungeon_runs cache")
    };
    // Turns up to the run's first snapshot: that turn stores the whole state, the others only
    // their events. Each run takes its snapshots at a phase of its own.
    let due = (1..=64)
        .find(|&turn| crucible::dungeon::snapshot_due(&run_id, turn))
        .expect("a snapshot within 32 turns");
    let due = i64::try_from(due).expect("small");
    for number in 1..=due {
        let turn = app
            .dungeon_turn(
                &run_id,
                &key,
                json!({"action": "inventory", "turnNumber": number}),
            )
            .await;
        assert_eq!(turn.status, 200, "{}", turn.body);
    }
    // The first turn read the row; the others played on the state the node kept.
    let held = u64::try_from(due - 1).expect("small");
    assert_eq!(runs_cache(&app), (held, 1));

    // Another writer (a second node) plays the next turn on the stored snapshot: `examine` costs 1 AP.
    let (state, version, state_seq, last_seq): (String, i64, i64, i64) = sqlx::query_as(
        "SELECT s.state, r.version, s.seq, r.last_seq
         FROM dungeon_runs r JOIN dungeon_run_snapshots s ON s.run_id = r.id WHERE r.id = $1",
    )
    .bind(&run_id)
    .fetch_one(app.state.store.read())
    .await
    .expect("row");
    assert_eq!(
        (state_seq, last_seq),
        (due, due),
        "turn {due} took a snapshot"
    );
    let mut game: crucible::dungeon::game::Run = serde_json::from_str(&state).expect("state");
    assert_eq!(game.turn_number() as i64, due);
    let ap_before = game.view().player.ap;
    game.apply(&crucible::dungeon::game::Action::new(
        crucible::dungeon::game::ActionKind::Examine,
        None,
    ))
    .expect("examine");
    let moved = sqlx::query(
        "UPDATE dungeon_runs SET version = version + 1, turn_number = $3
         WHERE id = $1 AND version = $2",
    )
    .bind(&run_id)
    .bind(version)
    .bind(due + 1)
    .execute(app.state.store.write())
    .await
    .expect("other writer");
    assert_eq!(moved.rows_affected(), 1);
    sqlx::query("UPDATE dungeon_run_snapshots SET state = $1 WHERE run_id = $2")
        .bind(serde_json::to_string(&game).expect("json"))
        .bind(&run_id)
        .execute(app.state.store.write())
        .await
        .expect("other writer's snapshot");

    // This node's next turn builds on that write, not on the state it held.
    let next = app
        .dungeon_turn(
            &run_id,
            &key,
            json!({"action": "inventory", "turnNumber": due + 2}),
        )
        .await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(next.body["turnNumber"], due + 2);
    assert_eq!(next.body["player"]["ap"], ap_before - 1);
    // The turn number it was sent was ahead of what the node held, so it read the run.
    assert_eq!(runs_cache(&app), (held, 1));

    // Once more, with a turn sent without a turn number: the node plays on the state it
    // holds, the write's version guard refuses it, and it plays again on the row.
    let (version,): (i64,) = sqlx::query_as("SELECT version FROM dungeon_runs WHERE id = $1")
        .bind(&run_id)
        .fetch_one(app.state.store.read())
        .await
        .expect("row");
    sqlx::query("UPDATE dungeon_runs SET version = version + 1, turn_number = $2 WHERE id = $1")
        .bind(&run_id)
        .bind(due + 3)
        .execute(app.state.store.write())
        .await
        .expect("other writer");
    // On SQLite an event is chained after its run's last, which it becomes (migration 0043).
    let chained = app.state.store.backend() == crucible::db::Backend::Sqlite;
    let (prev, chain) = if chained {
        (", prev", ", last_event_id")
    } else {
        ("", "")
    };
    sqlx::query(&format!(
        "INSERT INTO dungeon_run_events
             (run_id, seq, kind, turn_number, payload, created_at, action{prev})
         SELECT id, last_seq + 1, 'run:turn', $2, '{{}}', 0, '{{\"action\":\"inventory\"}}'{chain}
         FROM dungeon_runs WHERE id = $1",
    ))
    .bind(&run_id)
    .bind(due + 3)
    .execute(app.state.store.write())
    .await
    .expect("its event");
    if chained {
        sqlx::query(
            "UPDATE dungeon_runs SET last_event_id = (SELECT MAX(id) FROM dungeon_run_events)
             WHERE id = $1",
        )
        .bind(&run_id)
        .execute(app.state.store.write())
        .await
        .expect("its chain");
    }
    sqlx::query("UPDATE dungeon_runs SET last_seq = last_seq + 1 WHERE id = $1 AND version = $2")
        .bind(&run_id)
        .bind(version + 1)
        .execute(app.state.store.write())
        .await
        .expect("its sequence number");
    let after = app
        .dungeon_turn(&run_id, &key, json!({"action": "inventory"}))
        .await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(after.body["turnNumber"], due + 4, "{}", after.body);
    assert_eq!(
        runs_cache(&app),
        (held + 1, 1),
        "played once on what it held, refused"
    );
    // A reader that does not hold the run replays the turns after the snapshot onto it.
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    assert_eq!(page.body["state"]["turnNumber"], due + 4, "{}", page.body);
    assert_eq!(page.body["state"]["player"]["ap"], ap_before - 1);
}

#[tokio::test]
async fn a_run_read_back_after_a_restart_replays_its_turns_since_the_last_snapshot() {
    use crucible::dungeon::game::agent::{Agent, GreedyAgent};
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    // Real play (fights, moves, items, refusals) past the first snapshot, stopping a few turns
    // into the next stretch. The day's map is random: a run that ends before it gets there (its
    // last snapshot is its end) proves nothing, so another class tries.
    let mut played = None;
    for (attempt, class) in ["rogue", "fighter", "ranger", "defender", "mage", "gambler"]
        .into_iter()
        .enumerate()
    {
        let player = app
            .dungeon_player(
                &format!("replay{attempt}@example.com"),
                64 + attempt as u8,
                5_000_000,
            )
            .await;
        let run = app.dungeon_run(&player, class).await;
        let run_id = run["runId"].as_str().expect("run").to_owned();
        let key = run["registrationKey"].as_str().expect("key").to_owned();
        let mut agent = GreedyAgent::new();
        let mut last = app
            .dungeon_turn(&run_id, &key, json!({"action": "examine", "turnNumber": 1}))
            .await;
        let mut reached = false;
        for _ in 0..200 {
            let state = if last.status == 200 {
                last.body.clone()
            } else {
                last.body["state"].clone()
            };
            let visible: crucible::dungeon::game::VisibleState =
                serde_json::from_value(state).expect("state");
            if visible.status.is_over() {
                break;
            }
            // Past the run's first snapshot, on a turn that took none.
            if visible.turn_number >= 36
                && !crucible::dungeon::snapshot_due(&run_id, visible.turn_number)
            {
                reached = true;
                break;
            }
            let action = agent.decide(&visible);
            last = app
                .dungeon_turn(
                    &run_id,
                    &key,
                    json!({"action": action.action, "target": action.target,
                           "turnNumber": visible.turn_number + 1}),
                )
                .await;
            assert!(last.status == 200 || last.status == 400, "{}", last.body);
        }
        if reached {
            played = Some((run_id, last));
            break;
        }
    }
    let (run_id, last) = played.expect("some class's run lasts past its first snapshot");
    let mut expected = if last.status == 200 {
        last.body.clone()
    } else {
        last.body["state"].clone()
    };
    for field in ["runId", "lastTurn", "replayed"] {
        expected.as_object_mut().expect("state").remove(field);
    }
    let (state_seq, last_seq): (i64, i64) = sqlx::query_as(
        "SELECT s.seq, r.last_seq
             FROM dungeon_runs r JOIN dungeon_run_snapshots s ON s.run_id = r.id WHERE r.id = $1",
    )
    .bind(&run_id)
    .fetch_one(app.state.store.read())
    .await
    .expect("row");
    assert!(
        0 < state_seq && state_seq < last_seq,
        "a snapshot was taken and turns followed it ({state_seq} of {last_seq})"
    );
    // A fresh node holds nothing: it rebuilds the run from the snapshot and the turns after it.
    let app = app.restart().await;
    let page = app
        .get(&format!("/api/dungeons/runs/{run_id}"), Auth::None)
        .await;
    assert_eq!(page.body["state"], expected);
}

#[tokio::test]
async fn a_restart_loses_nothing_of_a_run() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let player = app.dungeon_player("r1@example.com", 62, 5_000_000).await;
    let run = app.dungeon_run(&player, "mage").await;
    let run_id = run["runId"].as_str().expect("run").to_owned();
    let key = run["registrationKey"].as_str().expect("key").to_owned();
    let before = app
        .dungeon_turn(&run_id, &key, json!({"action": "examine", "turnNumber": 1}))
        .await;
    assert_eq!(before.status, 200);

    let app = app.restart().await;
    let retried = app
        .dungeon_turn(&run_id, &key, json!({"action": "examine", "turnNumber": 1}))
        .await;
    assert_eq!(retried.status, 200, "{}", retried.body);
    assert_eq!(retried.body["replayed"], true);
    assert_eq!(retried.body["player"], before.body["player"]);
    let next = app
        .dungeon_turn(
            &run_id,
            &key,
            json!({"action": "inventory", "turnNumber": 2}),
        )
        .await;
    assert_eq!(next.status, 200, "{}", next.body);
    assert_eq!(next.body["player"]["ap"], 99);
    let credential = app
        .get(
            &format!("/api/dungeons/runs/{run_id}/credential"),
            Auth::Session(&player.session),
        )
        .await;
    assert_eq!(credential.body["registrationKey"], key);
}

#[tokio::test]
async fn the_scheduler_abandons_idle_runs_and_pays_the_days_best_score() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let today = app.dungeon_today();
    let winner = app.dungeon_player("w1@example.com", 51, 5_000_000).await;
    let loser = app.dungeon_player("w2@example.com", 52, 5_000_000).await;
    let won = app.dungeon_run(&winner, "fighter").await;
    let lost = app.dungeon_run(&loser, "fighter").await;
    let (won_id, won_key) = (
        won["runId"].as_str().expect("run"),
        won["registrationKey"].as_str().expect("key"),
    );
    let lost_key = lost["registrationKey"].as_str().expect("key");
    let (_, end) = app.dungeon_play_to_end(won_id, won_key).await;
    assert!(end.score > 0);

    let scheduler = crucible::scheduler::Scheduler::standard(
        &app.state.chain,
        &app.state.config,
        &app.state.node_id,
    )
    .expect("scheduler");
    scheduler.run_due(&app.state).await.expect("first pass");
    app.advance(Duration::minutes(29));
    scheduler.run_due(&app.state).await.expect("pass");
    let alive = app
        .dungeon_turn(
            lost["runId"].as_str().expect("run"),
            lost_key,
            json!({"action": "inventory"}),
        )
        .await;
    assert_eq!(
        alive.status, 200,
        "not idle long enough yet: {}",
        alive.body
    );

    app.advance(Duration::minutes(31));
    let pass = scheduler.run_due(&app.state).await.expect("pass");
    assert!(
        pass.schedules_run
            .iter()
            .any(|s| s == "dungeon.maintenance"),
        "{pass:?}"
    );
    let dead = app
        .dungeon_turn(
            lost["runId"].as_str().expect("run"),
            lost_key,
            json!({"action": "inventory"}),
        )
        .await;
    assert_eq!(dead.status, 401);
    let page = app
        .get(
            &format!(
                "/api/dungeons/runs/{}",
                lost["runId"].as_str().expect("run")
            ),
            Auth::None,
        )
        .await;
    assert_eq!(page.body["status"], "abandoned");
    assert_eq!(
        page.body["events"]
            .as_array()
            .expect("events")
            .last()
            .expect("ended")["event"],
        "run:ended"
    );
    assert_eq!(
        app.get("/api/account/payouts", Auth::Bearer(&winner.key))
            .await
            .body["payouts"],
        json!([]),
        "no prize before the day is over"
    );

    // After midnight the day is settled once: 2 entries × 1 USDC − 10% to the best score,
    // sent from the dungeon wallet by the payout job.
    app.advance(Duration::hours(12));
    scheduler.run_due(&app.state).await.expect("pass");
    scheduler
        .run_due(&app.state)
        .await
        .expect("idempotent pass");
    let payouts = app
        .get("/api/account/payouts", Auth::Bearer(&winner.key))
        .await
        .body;
    let list = payouts["payouts"].as_array().expect("payouts");
    assert_eq!(list.len(), 1, "{payouts}");
    assert_eq!(list[0]["sourceKind"], "dungeon");
    assert_eq!(list[0]["sourceId"], today);
    assert_eq!(list[0]["amountRaw"], "1800000");
    assert_eq!(list[0]["wallet"], winner.wallet());
    assert_eq!(list[0]["status"], "sent", "{payouts}");
    assert_eq!(
        app.get("/api/account/payouts", Auth::Bearer(&loser.key))
            .await
            .body["payouts"],
        json!([])
    );
    let detail = app.get(&format!("/api/dungeons/{today}"), Auth::None).await;
    assert_eq!(detail.body["status"], "closed");
    assert_eq!(detail.body["prizePoolRaw"], "1800000");
}

#[tokio::test]
async fn public_dungeon_reads_are_limited_per_ip() {
    let app = TestApp::spawn_with(|config| config.rate_limits = true).await;
    let board = format!("/api/dungeons/{}/leaderboard", app.dungeon_today());
    for _ in 0..120 {
        let response = app.get(&board, Auth::None).await;
        assert_eq!(response.status, 200, "{}", response.body);
    }
    let limited = app.get(&board, Auth::None).await;
    assert_eq!(limited.status, 429);
    assert!(limited.body["retryAfter"].as_u64().is_some_and(|s| s >= 1));
    assert_eq!(
        app.get("/api/dungeons", Auth::None).await.status,
        429,
        "one budget for every public dungeon read"
    );
}

#[tokio::test]
async fn a_suspended_accounts_runs_stop_playing_and_win_nothing() {
    let app = TestApp::spawn().await;
    app.dungeon_noon();
    let cheat = app.dungeon_player("cheat@example.com", 57, 5_000_000).await;
    let honest = app
        .dungeon_player("honest@example.com", 58, 5_000_000)
        .await;
    // The cheat's best run scores; the honest one never plays a turn.
    let best = app.dungeon_run(&cheat, "fighter").await;
    let (_, end) = app
        .dungeon_play_to_end(
            best["runId"].as_str().expect("run"),
            best["registrationKey"].as_str().expect("key"),
        )
        .await;
    assert!(end.score > 0);
    let open = app.dungeon_run(&cheat, "fighter").await;
    app.dungeon_run(&honest, "fighter").await;
    // A turn before the suspension: the node now holds this run and knows its key, so the turn
    // after it is refused by the write's guard, not by a key check.
    let before = app
        .dungeon_turn(
            open["runId"].as_str().expect("run"),
            open["registrationKey"].as_str().expect("key"),
            json!({"action": "inventory", "turnNumber": 1}),
        )
        .await;
    assert_eq!(before.status, 200, "{}", before.body);
    let scheduler = crucible::scheduler::Scheduler::standard(
        &app.state.chain,
        &app.state.config,
        &app.state.node_id,
    )
    .expect("scheduler");
    scheduler.run_due(&app.state).await.expect("first pass");

    let admin = app.session("dungeon-admin@example.com").await;
    crucible::admin::service::set_admin(
        &app.state.store,
        "dungeon-admin@example.com",
        true,
        app.state.now(),
    )
    .await
    .expect("grant");
    let cheat_id = app.get("/api/account", Auth::Bearer(&cheat.key)).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let suspended = app
        .post(
            &format!("/api/admin/accounts/{cheat_id}/suspend"),
            Auth::Session(&admin),
            json!({"reason": "botting the dungeon"}),
        )
        .await;
    assert_eq!(suspended.status, 200, "{}", suspended.body);

    // Its open run's key is refused with the reason.
    let refused = app
        .dungeon_turn(
            open["runId"].as_str().expect("run"),
            open["registrationKey"].as_str().expect("key"),
            json!({"action": "inventory"}),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body["error"]
            .as_str()
            .is_some_and(|m| m.contains("botting the dungeon")),
        "{}",
        refused.body
    );

    // The day's prize goes to the best run of an account in good standing.
    app.advance(Duration::hours(12));
    scheduler.run_due(&app.state).await.expect("pass");
    scheduler
        .run_due(&app.state)
        .await
        .expect("idempotent pass");
    let (cheat_prizes,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM payouts WHERE source_kind = 'dungeon' AND account_id = $1",
    )
    .bind(&cheat_id)
    .fetch_one(app.state.store.read())
    .await
    .expect("count");
    assert_eq!(cheat_prizes, 0);
    let payouts = app
        .get("/api/account/payouts", Auth::Bearer(&honest.key))
        .await
        .body;
    let list = payouts["payouts"].as_array().expect("payouts");
    assert_eq!(list.len(), 1, "{payouts}");
    assert_eq!(list[0]["sourceKind"], "dungeon");
    assert_eq!(list[0]["wallet"], honest.wallet());
}
