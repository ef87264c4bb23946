//! Fair tournaments end to end on the simnet: deposits and withdrawals after a wallet's
//! baseline are flows (not profit) and are counted once however often a round runs; a swap is
//! a trade; `disqualify` takes a depositor off the board and its prize goes to the next wallet;
//! each evaluation metric ranks crafted series as its formula says; a round that cannot value
//! the wallets leaves the board stale. Money that arrives without naming the wallet (a bare
//! token transfer, an account opened for it by someone else, a deposit bundled with a swap,
//! lamports through a closed account, an account gone before the round) is a flow too.

use chrono::Duration;
use crucible::chain::Keypair;
use crucible::chain::pool::Direction;
use crucible::chain::tx::{self, instructions};
use crucible::domain::WalletAddress;
use crucible::tournaments::rules::{EvaluationMetric, TransferPolicy};
use serde_json::{Value, json};

use crate::helpers::{Auth, TestApp};

const SOL: u64 = 1_000_000_000;
const USDC: u64 = 1_000_000;

async fn board(app: &TestApp, id: &str) -> Value {
    let response = app
        .get(&format!("/api/tournaments/{id}/leaderboard"), Auth::None)
        .await;
    assert_eq!(response.status, 200, "{}", response.body);
    response.body
}

fn entry<'a>(board: &'a Value, wallet: &str) -> &'a Value {
    board["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["wallet"] == wallet)
        .unwrap()
}

async fn snapshot(app: &TestApp) {
    app.snapshot_live().await.expect("snapshot");
}

async fn flows_recorded(app: &TestApp, id: &str) -> i64 {
    let (count,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM tournament_flows WHERE tournament_id = $1")
            .bind(id)
            .fetch_one(app.state.store.read())
            .await
            .unwrap();
    count
}

/// A live tournament with one registered wallet holding 1 SOL and 100 USDC.
async fn live_with_wallet(app: &TestApp, id: &str) -> Keypair {
    app.create_tournament(app.new_tournament(id, 0, 100, -Duration::minutes(1), 24))
        .await;
    let wallet = Keypair::generate();
    app.airdrop(&wallet.pubkey().to_string(), SOL, 100 * USDC)
        .await;
    app.register_free(id, &wallet.pubkey().to_string()).await;
    wallet
}

#[tokio::test]
async fn a_deposit_and_a_withdrawal_between_snapshots_are_flows_counted_once() {
    let app = TestApp::spawn().await;
    let wallet = live_with_wallet(&app, "trn_flow").await;
    let w = wallet.pubkey().to_string();
    let start = entry(&board(&app, "trn_flow").await, &w)["startValue"]
        .as_f64()
        .unwrap();

    app.advance(Duration::minutes(5));
    app.airdrop(&w, 0, 50 * USDC).await;
    snapshot(&app).await;
    let after_deposit = board(&app, "trn_flow").await;
    let row = entry(&after_deposit, &w);
    assert!(
        (row["currentValue"].as_f64().unwrap() - (start + 50.0)).abs() < 1e-6,
        "{row}"
    );
    assert!(
        (row["netFlows"].as_f64().unwrap() - 50.0).abs() < 1e-9,
        "{row}"
    );
    assert!(
        row["pnl"].as_f64().unwrap().abs() < 1e-6,
        "a deposit is no profit: {row}"
    );
    assert!(row["pnlPercent"].as_f64().unwrap().abs() < 1e-6, "{row}");
    assert_eq!(row["disqualified"], false);

    app.advance(Duration::minutes(5));
    let elsewhere = WalletAddress::parse(&Keypair::generate().pubkey().to_string()).unwrap();
    app.state
        .chain
        .transfer_token(
            &wallet,
            &elsewhere,
            app.state.chain.stablecoin_mint(),
            20 * USDC,
            "out",
        )
        .await
        .expect("withdraw");
    snapshot(&app).await;
    // The same round again, and a later one with nothing new: nothing is counted twice.
    snapshot(&app).await;
    app.advance(Duration::minutes(5));
    snapshot(&app).await;
    let after = board(&app, "trn_flow").await;
    let row = entry(&after, &w);
    // 50 in, 20 USDC out, and the rent of the recipient's new token account (SOL the wallet
    // paid into another wallet's account) out too.
    let net = row["netFlows"].as_f64().unwrap();
    assert!(net < 30.0 && net > 29.0, "{row}");
    // Only the network fee is a loss.
    let pnl = row["pnl"].as_f64().unwrap();
    assert!(pnl < 0.0 && pnl > -0.01, "a withdrawal is no loss: {row}");
    assert_eq!(flows_recorded(&app, "trn_flow").await, 2);
    assert!(row["maxDrawdownPercent"].as_f64().unwrap() < 1.0, "{row}");

    // A restart reads the chain again and still counts each flow once.
    let app = app.restart().await;
    app.advance(Duration::minutes(5));
    snapshot(&app).await;
    assert_eq!(flows_recorded(&app, "trn_flow").await, 2);
    let row = entry(&board(&app, "trn_flow").await, &w).clone();
    assert_eq!(row["netFlows"].as_f64().unwrap(), net, "{row}");
}

#[tokio::test]
async fn a_sol_deposit_is_valued_at_the_price_of_its_time_not_the_snapshots() {
    let app = TestApp::spawn().await;
    let wallet = live_with_wallet(&app, "trn_when").await;
    let w = wallet.pubkey().to_string();
    app.advance(Duration::minutes(5));
    let then = app.state.chain.price_source().sol_usd().await.unwrap();
    app.airdrop(&w, 2_000_000_000, 0).await;
    // SOL's price then moves a lot before the next snapshot.
    app.pump_sol(30_000 * USDC).await;
    let now = app.state.chain.price_source().sol_usd().await.unwrap();
    assert!(now > then * 1.2, "the pump moved the price: {then} → {now}");
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_when").await, &w).clone();
    let net = row["netFlows"].as_f64().unwrap();
    assert!(
        (net - 2.0 * then).abs() < 1e-6,
        "2 SOL at {then} = {}, not at {now} = {}: {row}",
        2.0 * then,
        2.0 * now
    );
}

#[tokio::test]
async fn a_wallet_joining_a_stale_board_does_not_make_it_fresh() {
    let app = TestApp::spawn().await;
    live_with_wallet(&app, "trn_stale_join").await;
    app.advance(Duration::hours(3));
    assert_eq!(board(&app, "trn_stale_join").await["stale"], true);
    // The newcomer's baseline is taken at once, but the others were not valued.
    app.register_free("trn_stale_join", &Keypair::generate().pubkey().to_string())
        .await;
    assert_eq!(board(&app, "trn_stale_join").await["stale"], true);
    snapshot(&app).await;
    assert_eq!(board(&app, "trn_stale_join").await["stale"], false);
}

#[tokio::test]
async fn a_swap_between_snapshots_is_a_trade() {
    let app = TestApp::spawn().await;
    let wallet = live_with_wallet(&app, "trn_swap").await;
    let w = wallet.pubkey().to_string();
    app.advance(Duration::minutes(5));
    app.swap_as(&wallet, Direction::SellUsdc, 40 * USDC).await;
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_swap").await, &w).clone();
    assert_eq!(row["netFlows"], 0.0, "{row}");
    assert_eq!(flows_recorded(&app, "trn_swap").await, 0);
    // The wallet holds less USDC and more SOL: its value moved by the pool fee and its own
    // price impact, never by the 40 USDC it swapped.
    let pnl = row["pnl"].as_f64().unwrap();
    assert!(pnl.abs() < 1.0, "{row}");
    assert!(
        (row["currentValue"].as_f64().unwrap() - row["startValue"].as_f64().unwrap()).abs() < 1.0
    );
}

#[tokio::test]
async fn disqualify_takes_a_depositor_off_the_board_and_the_next_wallet_is_paid() {
    let app = TestApp::spawn().await;
    const FEE: u64 = 2 * USDC;
    let mut new = app.new_tournament("trn_dq", FEE as i64, 10, Duration::minutes(1), 1);
    new.transfer_policy = TransferPolicy::Disqualify;
    app.create_tournament(new).await;
    let detail = app.get("/api/tournaments/trn_dq", Auth::None).await.body;
    assert_eq!(detail["transferPolicy"], "disqualify", "{detail}");
    assert_eq!(detail["evaluationMetric"], "pnl_percent");

    let depositor = Keypair::generate();
    let honest = Keypair::generate();
    // The depositor holds more SOL: it would win the price rise below.
    for (keypair, lamports) in [(&depositor, 3 * SOL), (&honest, SOL)] {
        let wallet = keypair.pubkey().to_string();
        app.airdrop(&wallet, lamports, 10 * USDC).await;
        app.pay_and_register(
            "trn_dq",
            keypair,
            std::slice::from_ref(&wallet),
            FEE,
            Auth::None,
        )
        .await;
    }
    let scheduler = crucible::scheduler::Scheduler::new(Vec::new());
    app.advance(Duration::minutes(1));
    scheduler.run_due(&app.state).await.expect("start");
    app.pump_sol(41_421_000_000).await;
    app.airdrop(&depositor.pubkey().to_string(), 0, USDC).await;
    app.advance(Duration::minutes(10));
    snapshot(&app).await;
    let live = board(&app, "trn_dq").await;
    let off = entry(&live, &depositor.pubkey().to_string());
    assert_eq!(off["disqualified"], true, "{off}");
    let reason = off["disqualifiedReason"].as_str().unwrap();
    assert!(
        reason.starts_with("external flow in of 1.00 USD"),
        "{reason}"
    );
    assert_eq!(off["rank"], 2, "off the board: after every eligible wallet");
    assert!(
        off["pnlPercent"].as_f64().unwrap()
            > entry(&live, &honest.pubkey().to_string())["pnlPercent"]
                .as_f64()
                .unwrap(),
        "it would have won"
    );

    app.advance(Duration::hours(1));
    scheduler.run_due(&app.state).await.expect("end and pay");
    let paid: Vec<(String, i64)> =
        sqlx::query_as("SELECT wallet, amount_raw FROM payouts WHERE source_id = 'trn_dq'")
            .fetch_all(app.state.store.read())
            .await
            .unwrap();
    assert_eq!(paid, vec![(honest.pubkey().to_string(), 2 * FEE as i64)]);
    let ended = board(&app, "trn_dq").await;
    assert_eq!(ended["entries"][0]["wallet"], honest.pubkey().to_string());
    assert_eq!(ended["entries"][0]["prizeAwardedRaw"], "4000000");
    assert_eq!(ended["entries"][1]["prizeAwardedRaw"], "0");
}

/// A tournament ranked by `metric` whose wallets have the given value series (no flows).
async fn crafted(app: &TestApp, id: &str, metric: EvaluationMetric, series: &[(&str, &[f64])]) {
    let mut new = app.new_tournament(id, 0, 100, -Duration::hours(1), 24);
    new.evaluation_metric = metric;
    app.create_tournament(new).await;
    for (index, (wallet, values)) in series.iter().enumerate() {
        let last = values.len() as i64 - 1;
        sqlx::query(
            "INSERT INTO tournament_registrations (tournament_id, wallet, registered_at, start_value_usd,
                                                   current_value_usd, snapshot_at, baseline_at)
             VALUES ($1, $2, $3, $4, $5, $6, 0)",
        )
        .bind(id)
        .bind(*wallet)
        .bind(index as i64)
        .bind(values[0])
        .bind(values[values.len() - 1])
        .bind(last * 60_000)
        .execute(app.state.store.write())
        .await
        .unwrap();
        for (at, value) in values.iter().enumerate() {
            sqlx::query(
                "INSERT INTO portfolio_snapshots (tournament_id, wallet, taken_at, value_usd) VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(*wallet)
            .bind(at as i64 * 60_000)
            .bind(*value)
            .execute(app.state.store.write())
            .await
            .unwrap();
        }
    }
}

fn order(board: &Value) -> Vec<String> {
    board["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["wallet"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn each_evaluation_metric_ranks_crafted_series_as_its_formula_says() {
    let app = TestApp::spawn().await;
    // steady: +1 % a period; volatile: +20 % in all, a 20 % drawdown; crash: +10 %, a 50 %
    // drawdown; short: +30 % in one period only.
    let series: &[(&str, &[f64])] = &[
        ("steady", &[100.0, 101.0, 102.01, 103.0301]),
        ("volatile", &[100.0, 120.0, 96.0, 120.0]),
        ("crash", &[100.0, 150.0, 75.0, 110.0]),
        ("short", &[100.0, 130.0]),
    ];
    let expected = [
        // Modified Dietz: 30 % > 20 % > 10 % > 3 %.
        (
            EvaluationMetric::PnlPercent,
            ["short", "volatile", "crash", "steady"],
        ),
        // Ratios need two periods: `short` ranks after every wallet that has one.
        (
            EvaluationMetric::Sharpe,
            ["steady", "volatile", "crash", "short"],
        ),
        (
            EvaluationMetric::Sortino,
            ["steady", "volatile", "crash", "short"],
        ),
        // Calmar needs one period. Neither short nor steady ever fell, so both divide by the
        // floor: 30 % before 3 %.
        (
            EvaluationMetric::Calmar,
            ["short", "steady", "volatile", "crash"],
        ),
    ];
    for (metric, wanted) in expected {
        let id = format!("trn_{}", metric.as_str());
        crafted(&app, &id, metric, series).await;
        let detail = app
            .get(&format!("/api/tournaments/{id}"), Auth::None)
            .await
            .body;
        assert_eq!(detail["evaluationMetric"], metric.as_str());
        let ranked = board(&app, &id).await;
        assert_eq!(order(&ranked), wanted, "{metric:?}: {ranked}");
        let volatile = entry(&ranked, "volatile");
        assert!((volatile["maxDrawdownPercent"].as_f64().unwrap() - 20.0).abs() < 1e-9);
        assert!(volatile["metricValue"].is_number());
    }
    let sharpe = board(&app, "trn_sharpe").await;
    assert!(
        entry(&sharpe, "short")["metricValue"].is_null(),
        "too few snapshots"
    );
    let calmar = board(&app, "trn_calmar").await;
    assert!((entry(&calmar, "volatile")["metricValue"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert!((entry(&calmar, "crash")["metricValue"].as_f64().unwrap() - 0.2).abs() < 1e-9);
}

#[tokio::test]
async fn a_round_that_cannot_value_the_wallets_leaves_the_board_stale() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_stale", 0, 100, -Duration::minutes(1), 24))
        .await;
    // A registration the chain cannot read (written behind the API's back).
    sqlx::query(
        "INSERT INTO tournament_registrations (tournament_id, wallet, registered_at) VALUES ('trn_stale', 'not-a-wallet', 0)",
    )
    .execute(app.state.store.write())
    .await
    .unwrap();
    app.advance(Duration::hours(3));
    assert_eq!(board(&app, "trn_stale").await["stale"], true);
    let failed = app.snapshot_live().await;
    assert!(failed.is_err());
    let still = board(&app, "trn_stale").await;
    assert_eq!(still["stale"], true, "{still}");
    assert!(still["latestSnapshotAt"].is_null());

    let wallet = Keypair::generate().pubkey().to_string();
    app.airdrop(&wallet, SOL, 0).await;
    app.register_free("trn_stale", &wallet).await;
    snapshot(&app).await;
    assert_eq!(board(&app, "trn_stale").await["stale"], false);
}

#[tokio::test]
async fn the_published_document_describes_the_fairness_fields() {
    let app = TestApp::spawn().await;
    let document = app.get("/api/openapi.json", Auth::None).await.body;
    let schemas = &document["components"]["schemas"];
    let view = &schemas["TournamentView"]["properties"];
    assert!(view.get("transferPolicy").is_some(), "{view}");
    assert!(view.get("evaluationMetric").is_some(), "{view}");
    assert_eq!(
        schemas["TransferPolicy"]["enum"],
        json!(["adjust", "disqualify"])
    );
    assert_eq!(
        schemas["EvaluationMetric"]["enum"],
        json!(["pnl_percent", "sharpe", "sortino", "calmar"])
    );
    let row = schemas["LeaderboardView"]["properties"]["entries"]["items"]["$ref"]
        .as_str()
        .expect("a named row schema")
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    // The row flattens its final standing in, so its properties sit inside an `allOf`.
    let entry = schemas[row.as_str()].to_string();
    for field in [
        "netFlows",
        "disqualified",
        "disqualifiedReason",
        "maxDrawdownPercent",
        "metricValue",
    ] {
        assert!(entry.contains(&format!("\"{field}\"")), "{field}: {entry}");
    }
}

#[tokio::test]
async fn the_host_cli_sets_the_transfer_policy_and_the_metric() {
    if std::env::var("TEST_DATABASE_URL").is_ok_and(|url| !url.is_empty()) {
        // The binary runs on the embedded database; the API tests cover PostgreSQL.
        return;
    }
    let app = TestApp::spawn().await;
    let data_dir = app.data_dir.path().to_path_buf();
    let start = (chrono::Utc::now() + Duration::days(1)).to_rfc3339();
    let end = (chrono::Utc::now() + Duration::days(2)).to_rfc3339();
    let create = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_crucible"))
            .args([
                "tournament",
                "create",
                "--name",
                "Fair Cup",
                "--entry-fee",
                "0",
            ])
            .args([
                "--max-participants",
                "8",
                "--starts-at",
                &start,
                "--ends-at",
                &end,
            ])
            .args(extra)
            .arg("--data-dir")
            .arg(&data_dir)
            .env_remove("DATABASE_URL")
            .env("CRUCIBLE_MASTER_KEY", "00".repeat(32))
            .output()
            .expect("run")
    };
    let created = create(&[
        "--transfer-policy",
        "disqualify",
        "--evaluation-metric",
        "sortino",
    ]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let detail = app
        .get(&format!("/api/tournaments/{id}"), Auth::None)
        .await
        .body;
    assert_eq!(detail["transferPolicy"], "disqualify");
    assert_eq!(detail["evaluationMetric"], "sortino");

    let refused = create(&["--evaluation-metric", "luck"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("evaluationMetric must be one of"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[tokio::test]
async fn an_unconfigured_market_seed_is_drawn_once_and_kept_with_the_data() {
    let app = TestApp::spawn_with(|c| c.market_seed = None).await;
    let stored = || async {
        let (seed,): (String,) =
            sqlx::query_as("SELECT value FROM deployment_settings WHERE name = 'market_seed'")
                .fetch_one(app.state.store.read())
                .await
                .unwrap();
        seed
    };
    let first = stored().await;
    assert!(first.parse::<u64>().is_ok());
    let again = crucible::deployment::market_seed(&app.state.store, None)
        .await
        .unwrap();
    assert_eq!(
        again.to_string(),
        first,
        "the same deployment, the same seed"
    );
    assert_eq!(
        crucible::deployment::market_seed(&app.state.store, Some(7))
            .await
            .unwrap(),
        7,
        "a configured seed wins"
    );
    assert_eq!(stored().await, first);
}

// Money that reaches a wallet without naming it: flows are found through every account the
// wallet holds and by reconciling its holdings, not only through `getSignaturesForAddress` of
// the wallet itself.

/// Rent of a 165-byte token account.
const TOKEN_ACCOUNT_RENT: u64 = 2_039_280;

fn stable_mint(app: &TestApp) -> tx::Pubkey {
    app.state.chain.stablecoin_mint().parse().unwrap()
}

fn ata_of(app: &TestApp, owner: &tx::Pubkey) -> tx::Pubkey {
    tx::associated_token_address(owner, &stable_mint(app), &tx::token_program())
}

/// A wallet outside every tournament holding 10 SOL and `usdc_raw` in its associated account.
async fn funder(app: &TestApp, usdc_raw: u64) -> Keypair {
    let funder = Keypair::generate();
    app.airdrop(&funder.pubkey().to_string(), 10 * SOL, usdc_raw)
        .await;
    funder
}

/// `TransferChecked` of `amount` stablecoin from `source` (owned by `owner`) to `destination`.
fn transfer_checked(
    app: &TestApp,
    owner: &Keypair,
    source: &tx::Pubkey,
    destination: &tx::Pubkey,
    amount: u64,
) -> tx::message::Instruction {
    instructions::token_transfer_checked(
        &tx::token_program(),
        source,
        &stable_mint(app),
        destination,
        &owner.pubkey(),
        amount,
        6,
    )
}

/// The instructions by which `payer` opens a token account (not an associated one) of the
/// stablecoin at `account` for `owner`, funding it with `lamports`.
fn open_account_for(
    app: &TestApp,
    payer: &Keypair,
    account: &Keypair,
    owner: &tx::Pubkey,
    lamports: u64,
) -> [tx::message::Instruction; 2] {
    [
        instructions::system_create_account(
            &payer.pubkey(),
            &account.pubkey(),
            lamports,
            165,
            &tx::token_program(),
        ),
        instructions::token_initialize_account3(
            &tx::token_program(),
            &account.pubkey(),
            &stable_mint(app),
            owner,
        ),
    ]
}

async fn sol_price(app: &TestApp) -> f64 {
    app.state.chain.price_source().sol_usd().await.unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[tokio::test]
async fn a_bare_transfer_checked_into_an_existing_account_is_a_deposit_not_profit() {
    let app = TestApp::spawn().await;
    app.create_tournament(app.new_tournament("trn_bare", 0, 100, -Duration::minutes(1), 24))
        .await;
    let mut dq = app.new_tournament("trn_bare_dq", 0, 100, -Duration::minutes(1), 24);
    dq.transfer_policy = TransferPolicy::Disqualify;
    app.create_tournament(dq).await;
    let (by_cli, bare) = (Keypair::generate(), Keypair::generate());
    for wallet in [&by_cli, &bare] {
        let address = wallet.pubkey().to_string();
        app.airdrop(&address, 40_000_000, 100 * USDC).await;
        app.register_free("trn_bare", &address).await;
        app.register_free("trn_bare_dq", &address).await;
    }
    let funder = funder(&app, 2_000 * USDC).await;
    app.advance(Duration::minutes(5));
    // One deposit the way the wallet CLI sends it (it names the wallet)…
    app.state
        .chain
        .transfer_token(
            &funder,
            &WalletAddress::parse(&by_cli.pubkey().to_string()).unwrap(),
            app.state.chain.stablecoin_mint(),
            1_000 * USDC,
            "deposit",
        )
        .await
        .expect("deposit");
    // …and one bare TransferChecked into the existing account, signed by the funder only: the
    // wallet's address is nowhere in it.
    let signature = app
        .send_as(
            &funder,
            &[transfer_checked(
                &app,
                &funder,
                &ata_of(&app, &funder.pubkey()),
                &ata_of(&app, &bare.pubkey()),
                1_000 * USDC,
            )],
        )
        .await;
    snapshot(&app).await;
    let ranked = board(&app, "trn_bare").await;
    let rows: Vec<Value> = ranked["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let who = if e["wallet"] == bare.pubkey().to_string() {
                "bare transferChecked"
            } else {
                "counted flow (CLI)"
            };
            json!({"funded by": who, "startValue": e["startValue"], "currentValue": e["currentValue"],
                   "netFlows": e["netFlows"], "pnl": e["pnl"], "pnlPercent": e["pnlPercent"],
                   "rank": e["rank"]})
        })
        .collect();
    println!(
        "board after both deposits:\n{}",
        serde_json::to_string_pretty(&rows).unwrap()
    );
    for row in &rows {
        assert!(close(row["netFlows"].as_f64().unwrap(), 1_000.0), "{row}");
        assert!(
            close(row["pnl"].as_f64().unwrap(), 0.0),
            "a deposit is no profit: {row}"
        );
        assert!(close(row["pnlPercent"].as_f64().unwrap(), 0.0), "{row}");
    }
    // Under `disqualify` the bare deposit takes the wallet off the board, naming the transaction.
    let strict = board(&app, "trn_bare_dq").await;
    let off = entry(&strict, &bare.pubkey().to_string());
    assert_eq!(off["disqualified"], true, "{off}");
    let reason = off["disqualifiedReason"].as_str().unwrap();
    assert!(
        reason.starts_with("external flow in of 1000.00 USD") && reason.contains(&signature),
        "{reason}"
    );
}

#[tokio::test]
async fn a_transfer_into_a_second_account_opened_by_someone_else_is_a_deposit() {
    let app = TestApp::spawn().await;
    let wallet = live_with_wallet(&app, "trn_second").await;
    let w = wallet.pubkey().to_string();
    let funder = funder(&app, 2_000 * USDC).await;
    app.advance(Duration::minutes(5));
    let second = Keypair::generate();
    let [create, initialize] =
        open_account_for(&app, &funder, &second, &wallet.pubkey(), TOKEN_ACCOUNT_RENT);
    let deposit = transfer_checked(
        &app,
        &funder,
        &ata_of(&app, &funder.pubkey()),
        &second.pubkey(),
        1_000 * USDC,
    );
    app.send_signed_by(&funder, &[&second], &[create, initialize, deposit])
        .await;
    let price = sol_price(&app).await;
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_second").await, &w).clone();
    let opened = 1_000.0 + TOKEN_ACCOUNT_RENT as f64 / SOL as f64 * price;
    assert!(
        close(row["netFlows"].as_f64().unwrap(), opened),
        "{opened}: {row}"
    );
    assert!(close(row["pnl"].as_f64().unwrap(), 0.0), "{row}");

    // A later deposit into that account is found through its own signatures.
    app.advance(Duration::minutes(5));
    app.send_as(
        &funder,
        &[transfer_checked(
            &app,
            &funder,
            &ata_of(&app, &funder.pubkey()),
            &second.pubkey(),
            500 * USDC,
        )],
    )
    .await;
    // A swap whose output lands in that (non-associated) account is a trade.
    app.send_as(
        &wallet,
        &[crucible::chain::pool::swap(
            &wallet.pubkey(),
            &second.pubkey(),
            Direction::SellSol,
            SOL / 10,
            0,
        )],
    )
    .await;
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_second").await, &w).clone();
    assert!(
        close(row["netFlows"].as_f64().unwrap(), opened + 500.0),
        "{row}"
    );
    let pnl = row["pnl"].as_f64().unwrap();
    assert!(
        pnl < 0.0 && pnl > -1.0,
        "only the swap's fee and impact: {row}"
    );
    assert_eq!(flows_recorded(&app, "trn_second").await, 2);
}

#[tokio::test]
async fn a_deposit_bundled_with_a_swap_is_still_a_deposit() {
    let app = TestApp::spawn().await;
    let wallet = live_with_wallet(&app, "trn_bundle").await;
    let w = wallet.pubkey().to_string();
    let funder = funder(&app, 2_000 * USDC).await;
    app.advance(Duration::minutes(5));
    let deposit = transfer_checked(
        &app,
        &funder,
        &ata_of(&app, &funder.pubkey()),
        &ata_of(&app, &wallet.pubkey()),
        1_000 * USDC,
    );
    let swap = crucible::chain::pool::swap(
        &wallet.pubkey(),
        &ata_of(&app, &wallet.pubkey()),
        Direction::SellUsdc,
        USDC,
        0,
    );
    app.send_signed_by(&wallet, &[&funder], &[deposit, swap])
        .await;
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_bundle").await, &w).clone();
    assert!(close(row["netFlows"].as_f64().unwrap(), 1_000.0), "{row}");
    let pnl = row["pnl"].as_f64().unwrap();
    assert!(
        pnl < 0.0 && pnl > -0.1,
        "the tiny swap's fee, never the deposit: {row}"
    );
}

#[tokio::test]
async fn lamports_arriving_through_a_closed_account_are_a_deposit() {
    let app = TestApp::spawn().await;
    let wallet = live_with_wallet(&app, "trn_close").await;
    let w = wallet.pubkey().to_string();
    let funder = funder(&app, 0).await;
    app.advance(Duration::minutes(5));
    // The funder opens an account for the wallet holding 5 SOL more than its rent; the
    // wallet's address is only in the instruction data.
    let stuffed = Keypair::generate();
    let lamports = 5 * SOL + TOKEN_ACCOUNT_RENT;
    app.send_signed_by(
        &funder,
        &[&stuffed],
        &open_account_for(&app, &funder, &stuffed, &wallet.pubkey(), lamports),
    )
    .await;
    let price = sol_price(&app).await;
    snapshot(&app).await;
    let gift = lamports as f64 / SOL as f64 * price;
    let row = entry(&board(&app, "trn_close").await, &w).clone();
    assert!(close(row["netFlows"].as_f64().unwrap(), gift), "{row}");
    // The wallet closes it into itself: its own SOL moving, no flow and no gain.
    app.advance(Duration::minutes(5));
    app.send_as(
        &wallet,
        &[instructions::token_close_account(
            &tx::token_program(),
            &stuffed.pubkey(),
            &wallet.pubkey(),
            &wallet.pubkey(),
        )],
    )
    .await;
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_close").await, &w).clone();
    assert!(close(row["netFlows"].as_f64().unwrap(), gift), "{row}");
    let pnl = row["pnl"].as_f64().unwrap();
    assert!(pnl < 0.0 && pnl > -0.01, "only the network fee: {row}");
}

#[tokio::test]
async fn money_through_an_account_gone_before_the_round_is_found_by_reconciling() {
    let app = TestApp::spawn().await;
    let mut new = app.new_tournament("trn_gone", 0, 100, -Duration::minutes(1), 24);
    new.transfer_policy = TransferPolicy::Disqualify;
    app.create_tournament(new).await;
    let wallet = Keypair::generate();
    let w = wallet.pubkey().to_string();
    app.airdrop(&w, SOL, 100 * USDC).await;
    app.register_free("trn_gone", &w).await;
    let funder = funder(&app, 2_000 * USDC).await;
    app.advance(Duration::minutes(5));
    // Between two rounds: a temporary account is opened for the wallet and funded, then the
    // wallet moves the money into its own account and closes the temporary one. No round ever
    // lists the temporary account, and the deposit never names the wallet.
    let temporary = Keypair::generate();
    let [create, initialize] = open_account_for(
        &app,
        &funder,
        &temporary,
        &wallet.pubkey(),
        TOKEN_ACCOUNT_RENT,
    );
    let fund = transfer_checked(
        &app,
        &funder,
        &ata_of(&app, &funder.pubkey()),
        &temporary.pubkey(),
        1_000 * USDC,
    );
    app.send_signed_by(&funder, &[&temporary], &[create, initialize, fund])
        .await;
    let sweep = transfer_checked(
        &app,
        &wallet,
        &temporary.pubkey(),
        &ata_of(&app, &wallet.pubkey()),
        1_000 * USDC,
    );
    let close_it = instructions::token_close_account(
        &tx::token_program(),
        &temporary.pubkey(),
        &wallet.pubkey(),
        &wallet.pubkey(),
    );
    app.send_as(&wallet, &[sweep, close_it]).await;
    let price = sol_price(&app).await;
    snapshot(&app).await;
    let row = entry(&board(&app, "trn_gone").await, &w).clone();
    let arrived = 1_000.0 + TOKEN_ACCOUNT_RENT as f64 / SOL as f64 * price;
    assert!(close(row["netFlows"].as_f64().unwrap(), arrived), "{row}");
    assert_eq!(row["disqualified"], true, "{row}");
    let reason = row["disqualifiedReason"].as_str().unwrap();
    assert!(
        reason.contains("no transaction of the wallet's accounts explains"),
        "{reason}"
    );
    // Counted once: a repeated round finds nothing new.
    snapshot(&app).await;
    let again = entry(&board(&app, "trn_gone").await, &w).clone();
    assert_eq!(again["netFlows"], row["netFlows"]);
    assert_eq!(flows_recorded(&app, "trn_gone").await, 1);
}
