//! Refunds: a cancelled paid tournament pays every entry back, on chain, to the wallet that paid
//! it, the amount it paid, from the tournament's escrow. A refund is a `payouts` row with
//! `source_kind = 'refund'`, sent by the same `payout.send` job as a prize, so it is exactly once
//! in the same way: leased, recorded before it is sent, resent or replaced only once it can no
//! longer land, and `sent` at finality (`docs/payouts.md`).

use chrono::{DateTime, Utc};
use sqlx::AnyConnection;

use serde_json::{Value, json};

use super::payouts::SEND_JOB;
use crate::audit::{self, Actor, Entry};
use crate::clock::to_millis;
use crate::crypto::new_id;
use crate::scheduler;

/// Record a refund for every wallet that paid an entry of `tournament_id` (one per payer: the
/// sum of what it paid, attributed to the account its entries were attributed to) and schedule
/// their sending. Runs inside the transaction that cancels the tournament, so a cancellation
/// and its refunds are written whole or not at all. Idempotent. Returns the refunds recorded.
pub(crate) async fn record(
    conn: &mut AnyConnection,
    tournament_id: &str,
    mint: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<usize> {
    // Summed per payer from the claims alone (a claim that registered several wallets is still
    // one payment), and the account from the registrations that payment made.
    let payers: Vec<(String, i64, Option<String>)> = sqlx::query_as(
        "SELECT c.payer, CAST(SUM(c.amount_raw) AS BIGINT),
                (SELECT MIN(r.account_id) FROM tournament_registrations r
                 JOIN payment_claims p ON p.signature = r.tx_signature
                 WHERE r.tournament_id = $1 AND p.payer = c.payer)
         FROM payment_claims c
         WHERE c.purpose = 'tournament' AND c.reference = $1 AND c.amount_raw > 0
         GROUP BY c.payer",
    )
    .bind(tournament_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut recorded = 0;
    for (payer, amount, account_id) in payers {
        let refund_id = new_id("pay");
        let inserted = sqlx::query(
            "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, amount_raw, mint, status, created_at)
             VALUES ($1, $2, $3, 'refund', $4, $5, $6, 'pending', $7)
             ON CONFLICT (source_kind, source_id, wallet) DO NOTHING",
        )
        .bind(&refund_id)
        .bind(account_id.as_deref())
        .bind(&payer)
        .bind(tournament_id)
        .bind(amount)
        .bind(mint)
        .bind(to_millis(now))
        .execute(&mut *conn)
        .await?;
        if inserted.rows_affected() == 1 {
            scheduler::enqueue(&mut *conn, SEND_JOB, &refund_id, now, now).await?;
            let mut entry = Entry::new(&Actor::System, "refund.record", "payout", &refund_id)
                .change(
                    Value::Null,
                    json!({"wallet": payer, "amountRaw": amount.to_string(), "tournamentId": tournament_id}),
                );
            if let Some(account_id) = account_id.as_deref() {
                entry = entry.account(account_id);
            }
            audit::record(&mut *conn, entry, now).await?;
            recorded += 1;
        }
    }
    Ok(recorded)
}
