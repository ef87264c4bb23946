//! Refunds: a cancelled paid tournament pays every entry back, on chain, to the wallet that paid
//! it, the amount it paid, from the tournament's escrow. A refund is a `payouts` row with
//! `source_kind = 'refund'`, sent by the same `payout.send` job as a prize, so it is exactly once
//! in the same way: leased, recorded before it is sent, resent or replaced only once it can no
//! longer land, and `sent` at finality (`docs/payouts.md`).
//!
//! An agent's paid entry that could not register (the tournament filled, closed or was cancelled
//! while its fee was on the way) is refunded the same way ([`record_entry_refund`]).

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
    let cancelled: Option<(Option<String>,)> =
        sqlx::query_as("SELECT cancellation_reason FROM tournaments WHERE id = $1")
            .bind(tournament_id)
            .fetch_optional(&mut *conn)
            .await?;
    let reason = match cancelled.and_then(|(reason,)| reason) {
        Some(why) => format!("the tournament was cancelled: {why}"),
        None => "the tournament was cancelled".to_owned(),
    };
    // The entries refunded no longer count against the spend limits of the keys that paid them.
    let paid: Vec<(String,)> = sqlx::query_as(
        "SELECT c.signature FROM payment_claims c JOIN key_spends s ON s.signature = c.signature
         WHERE c.purpose = 'tournament' AND c.reference = $1 AND s.released_at IS NULL",
    )
    .bind(tournament_id)
    .fetch_all(&mut *conn)
    .await?;
    for (signature,) in paid {
        crate::api_keys::spend::release(&mut *conn, &signature, &reason, now).await?;
    }
    let mut recorded = 0;
    for (payer, amount, account_id) in payers {
        let refund_id = new_id("pay");
        let inserted = sqlx::query(
            "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, amount_raw, mint, status, created_at, reason)
             VALUES ($1, $2, $3, 'refund', $4, $5, $6, 'pending', $7, $8)
             ON CONFLICT (source_kind, source_id, wallet) DO NOTHING",
        )
        .bind(&refund_id)
        .bind(account_id.as_deref())
        .bind(&payer)
        .bind(tournament_id)
        .bind(amount)
        .bind(mint)
        .bind(to_millis(now))
        .bind(&reason)
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

/// The purpose of the claim that marks an entry fee as paid back rather than registered: the
/// signature can then never register anything, and a later cancellation (which refunds the
/// `tournament` claims) does not pay it back a second time.
pub(crate) const REFUNDED_ENTRY: &str = "tournament_refund";

/// A fee that landed for an entry that could not register.
pub(crate) struct UnregisteredFee<'a> {
    pub signature: &'a str,
    pub tournament_id: &'a str,
    pub payer: &'a str,
    pub account_id: &'a str,
    pub amount_raw: i64,
    pub mint: &'a str,
    /// Why it could not register, shown with the refund.
    pub reason: &'a str,
}

/// Record the refund of `fee` and schedule its sending, in one transaction with the claim of
/// its signature: the claim is the arbiter, so a fee that registered (or was refunded already,
/// by a concurrent call or the settling job) is never refunded. Returns the refund's id, or
/// `None` when the signature was claimed already.
pub(crate) async fn record_entry_refund(
    store: &crate::db::Store,
    fee: &UnregisteredFee<'_>,
    now: DateTime<Utc>,
) -> Result<Option<String>, crate::db::StoreError> {
    let mut tx = store.begin().await?;
    let claimed = sqlx::query(
        "INSERT INTO payment_claims (signature, purpose, reference, payer, amount_raw, claimed_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (signature) DO NOTHING",
    )
    .bind(fee.signature)
    .bind(REFUNDED_ENTRY)
    .bind(fee.tournament_id)
    .bind(fee.payer)
    .bind(fee.amount_raw)
    .bind(to_millis(now))
    .execute(&mut *tx)
    .await?;
    if claimed.rows_affected() == 0 {
        return Ok(None);
    }
    let refund_id = new_id("pay");
    // No ON CONFLICT: the payer's fee for this tournament is refunded once; a second refund row
    // for the same wallet would mean something else is wrong, so the whole write fails instead.
    sqlx::query(
        "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, amount_raw, mint, status, created_at, reason)
         VALUES ($1, $2, $3, 'refund', $4, $5, $6, 'pending', $7, $8)",
    )
    .bind(&refund_id)
    .bind(fee.account_id)
    .bind(fee.payer)
    .bind(fee.tournament_id)
    .bind(fee.amount_raw)
    .bind(fee.mint)
    .bind(to_millis(now))
    .bind(fee.reason)
    .execute(&mut *tx)
    .await?;
    scheduler::enqueue(&mut tx, SEND_JOB, &refund_id, now, now).await?;
    let entry = Entry::new(&Actor::System, "refund.record", "payout", &refund_id)
        .account(fee.account_id)
        .change(
            Value::Null,
            json!({"wallet": fee.payer, "amountRaw": fee.amount_raw.to_string(),
                   "tournamentId": fee.tournament_id, "signature": fee.signature}),
        )
        .detail(fee.reason);
    audit::record(&mut tx, entry, now).await?;
    // A refunded entry no longer counts against the spend limits of the key that paid it.
    crate::api_keys::spend::release(&mut tx, fee.signature, "the entry was refunded", now).await?;
    tx.commit().await?;
    Ok(Some(refund_id))
}
