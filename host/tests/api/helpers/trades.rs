//! What every report of a trade must agree on, whichever path reports it (the trades API, the
//! `agent.trade` webhook, the agent page, the backtest report): its amount of the base token at
//! its price is its notional, within the fee and the rounding of 6-decimal amounts.

use serde_json::Value;

/// Assert that `amount` of the base at `price` comes to `notional` (whole USDC), give or take
/// the fee and one raw unit of the amount at that price. `what` names the report for the message.
pub fn assert_adds_up(what: &str, amount: f64, price: f64, notional: f64, fee: f64) {
    assert!(
        amount > 0.0 && price > 0.0 && notional > 0.0,
        "{what}: amount {amount}, price {price}, notional {notional}"
    );
    let tolerance = fee.abs() + price * 1e-6 + 1e-6;
    let valued = amount * price;
    assert!(
        (valued - notional).abs() <= tolerance,
        "{what}: {amount} × {price} = {valued}, but the notional is {notional} (fee {fee})"
    );
}

/// [`assert_adds_up`] over one JSON trade with the given field names.
pub fn assert_json_adds_up(what: &str, trade: &Value, amount_field: &str) {
    let number = |field: &str| {
        trade[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: `{field}` is not a number in {trade}"))
    };
    assert_adds_up(
        &format!("{what} {trade}"),
        number(amount_field),
        number("price"),
        number("notional"),
        number("fee"),
    );
}

/// The `agent.trade` payloads queued for delivery, oldest first.
pub async fn webhook_trades(app: &super::TestApp) -> Vec<Value> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT payload FROM webhook_deliveries WHERE event = 'agent.trade' ORDER BY created_at, id",
    )
    .fetch_all(app.state.store.read())
    .await
    .expect("payloads");
    rows.into_iter()
        .map(|(payload,)| {
            let payload: Value = serde_json::from_str(&payload).expect("json");
            if payload["data"].is_object() {
                payload["data"].clone()
            } else {
                payload
            }
        })
        .collect()
}

/// Run the scheduler, moving the test clock by `step` after each pass, until the agents have
/// made at least `wanted` trades (all agents, or `agent_id`'s) or `passes` passes ran; how
/// many trades there are then.
pub async fn tick_until_traded(
    app: &super::TestApp,
    agent_id: Option<&str>,
    wanted: i64,
    step: chrono::Duration,
    passes: usize,
) -> i64 {
    let mut traded = 0;
    for _ in 0..passes {
        app.run_scheduler().await;
        app.advance(step);
        let (count,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM agent_trades WHERE $1 IS NULL OR agent_id = $1")
                .bind(agent_id)
                .fetch_one(app.state.store.read())
                .await
                .expect("count");
        traded = count;
        if traded >= wanted {
            break;
        }
    }
    traded
}
