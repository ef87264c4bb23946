//! Prizes: when a tournament ends, the pool (entry fees × participants − rake) is split by the
//! configured percentages over the final ranks and recorded as payouts (`pending`), each sent
//! from the escrow wallet by a scheduler job (`sent` with the transfer signature). The same job
//! sends the dungeon's daily prize (`source_kind = 'dungeon'`) from the dungeon wallet.
//!
//! A payout is never sent twice: the transfer is signed first and its signature recorded, then
//! sent. A retry first asks the chain about the recorded signature; it signs a new transfer only
//! when the old one failed on chain, or was never seen and its blockhash has surely expired.

use anyhow::{Context, anyhow, bail};
use chrono::Duration;

use super::leaderboard;
use super::model::Tournament;
use crate::clock::to_millis;
use crate::crypto::new_id;
use crate::domain::WalletAddress;
use crate::scheduler;
use crate::state::AppState;

pub const SEND_JOB: &str = "payout.send";
/// After this long unseen, a signed transfer's blockhash has expired (≈ 150 slots, with margin).
const RESIGN_AFTER: Duration = Duration::minutes(2);

/// Amounts per place: each share rounded down, the remainder to first place so the whole pool
/// is paid. Places beyond the number of winners are folded back proportionally.
pub fn split(pool: i64, percentages: &[u32], winners: usize) -> Vec<i64> {
    let places = &percentages[..percentages.len().min(winners)];
    let total: i64 = places.iter().map(|p| i64::from(*p)).sum();
    if pool <= 0 || total == 0 {
        return Vec::new();
    }
    let mut amounts: Vec<i64> = places
        .iter()
        .map(|p| pool * i64::from(*p) / total)
        .collect();
    let paid: i64 = amounts.iter().sum();
    if let Some(first) = amounts.first_mut() {
        *first += pool - paid;
    }
    amounts
}

/// Record the payouts of an ended tournament and schedule their sending. Idempotent.
pub async fn award(state: &AppState, tournament: &Tournament) -> anyhow::Result<usize> {
    let standings = leaderboard::ranked(state, tournament)
        .await
        .map_err(|error| anyhow!("{error}"))?;
    // A disqualified wallet is never paid: the next eligible wallet takes its place.
    let eligible: Vec<&leaderboard::Entry> = standings.iter().filter(|e| !e.disqualified).collect();
    let amounts = split(
        tournament.prize_pool_raw(),
        &tournament.payout_split(),
        eligible.len(),
    );
    let now = state.now();
    let mut tx = state.store.begin().await?;
    let mut recorded = 0;
    for (entry, amount) in eligible.into_iter().zip(amounts) {
        if amount <= 0 {
            continue;
        }
        let payout_id = new_id("pay");
        let inserted = sqlx::query(
            "INSERT INTO payouts (id, account_id, wallet, source_kind, source_id, rank, amount_raw, mint, status, created_at)
             SELECT $1, account_id, wallet, 'tournament', $2, $3, $4, $5, 'pending', $6
             FROM tournament_registrations WHERE tournament_id = $2 AND wallet = $7
             ON CONFLICT (source_kind, source_id, wallet) DO NOTHING",
        )
        .bind(&payout_id)
        .bind(&tournament.id)
        .bind(entry.rank as i64)
        .bind(amount)
        .bind(state.chain.stablecoin_mint())
        .bind(to_millis(now))
        .bind(&entry.wallet)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            continue;
        }
        sqlx::query("UPDATE tournament_registrations SET prize_awarded_raw = $1 WHERE tournament_id = $2 AND wallet = $3")
            .bind(amount)
            .bind(&tournament.id)
            .bind(&entry.wallet)
            .execute(&mut *tx)
            .await?;
        scheduler::enqueue(&mut tx, SEND_JOB, &payout_id, now, now).await?;
        recorded += 1;
    }
    tx.commit().await?;
    if recorded > 0 {
        tracing::info!(tournament_id = tournament.id, recorded, "payouts recorded");
    }
    Ok(recorded)
}

/// Where a payout stands; a stored value outside these is refused when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PayoutStatus {
    Pending,
    Sent,
    Failed,
}

impl TryFrom<String> for PayoutStatus {
    type Error = UnknownValue;

    fn try_from(stored: String) -> Result<Self, UnknownValue> {
        match stored.as_str() {
            "pending" => Ok(PayoutStatus::Pending),
            "sent" => Ok(PayoutStatus::Sent),
            "failed" => Ok(PayoutStatus::Failed),
            _ => Err(UnknownValue(stored)),
        }
    }
}

/// What a payout pays for, which decides the wallet it is paid from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SourceKind {
    Tournament,
    Dungeon,
}

impl TryFrom<String> for SourceKind {
    type Error = UnknownValue;

    fn try_from(stored: String) -> Result<Self, UnknownValue> {
        match stored.as_str() {
            "tournament" => Ok(SourceKind::Tournament),
            "dungeon" => Ok(SourceKind::Dungeon),
            _ => Err(UnknownValue(stored)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown stored value `{0}`")]
struct UnknownValue(String);

/// A payout as the sending job reads it.
#[derive(Debug, sqlx::FromRow)]
struct Payout {
    wallet: String,
    amount_raw: i64,
    mint: String,
    #[sqlx(try_from = "String")]
    status: PayoutStatus,
    tx_signature: Option<String>,
    last_attempt_at: Option<i64>,
    #[sqlx(try_from = "String")]
    source_kind: SourceKind,
}

/// Send one payout (the job). Errors leave it `pending` for the scheduler to retry.
pub async fn send(state: &AppState, payout_id: &str) -> anyhow::Result<()> {
    let row: Option<Payout> = sqlx::query_as(
        "SELECT wallet, amount_raw, mint, status, tx_signature, last_attempt_at, source_kind FROM payouts WHERE id = $1",
    )
    .bind(payout_id)
    .fetch_optional(state.store.read())
    .await?;
    let Some(payout) = row else {
        return Ok(());
    };
    if payout.status != PayoutStatus::Pending {
        return Ok(());
    }
    if let Some(signature) = payout.tx_signature {
        match state
            .chain
            .signature_status(&signature)
            .await
            .context("checking the earlier transfer")?
        {
            Some(seen) if seen.err.is_none() => {
                return mark_sent(state, payout_id, &signature).await;
            }
            Some(_) => tracing::warn!(
                payout_id,
                signature,
                "earlier payout transfer failed on chain; signing anew"
            ),
            None => {
                let attempted = payout.last_attempt_at.unwrap_or(0);
                if to_millis(state.now()) - attempted < RESIGN_AFTER.num_milliseconds() {
                    bail!("transfer {signature} not seen yet; waiting before signing a new one");
                }
            }
        }
    }
    // Tournament prizes come from the escrow that took the fees, dungeon prizes from the
    // dungeon wallet.
    let (source, role) = match payout.source_kind {
        SourceKind::Dungeon => (state.chain.dungeon(), "dungeon wallet"),
        SourceKind::Tournament => (state.chain.escrow(), "escrow"),
    };
    let escrow = source.keypair().ok_or_else(|| {
        anyhow!("this server does not hold the {role} key, so it cannot pay prizes")
    })?;
    let to = WalletAddress::parse(&payout.wallet).map_err(anyhow::Error::msg)?;
    let amount = u64::try_from(payout.amount_raw).context("negative payout")?;
    let (signature, wire) = state
        .chain
        .sign_token_transfer(
            escrow,
            &to,
            &payout.mint,
            amount,
            &format!("payout:{payout_id}"),
        )
        .await
        .context("signing the payout")?;
    // Recorded before sending: whatever happens next, a retry knows what may be in flight.
    sqlx::query("UPDATE payouts SET tx_signature = $1, attempts = attempts + 1, last_attempt_at = $2 WHERE id = $3 AND status = 'pending'")
        .bind(&signature)
        .bind(to_millis(state.now()))
        .bind(payout_id)
        .execute(state.store.write())
        .await?;
    if let Err(error) = state.chain.send_signed(&wire).await {
        let message = format!("{error}");
        sqlx::query("UPDATE payouts SET last_error = $1 WHERE id = $2")
            .bind(&message)
            .bind(payout_id)
            .execute(state.store.write())
            .await?;
        bail!("sending the payout failed: {message}");
    }
    mark_sent(state, payout_id, &signature).await
}

async fn mark_sent(state: &AppState, payout_id: &str, signature: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE payouts SET status = 'sent', tx_signature = $1, sent_at = $2, last_error = NULL WHERE id = $3")
        .bind(signature)
        .bind(to_millis(state.now()))
        .bind(payout_id)
        .execute(state.store.write())
        .await?;
    tracing::info!(payout_id, signature, "payout sent");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn the_whole_pool_is_split_and_empty_places_fold_back() {
        assert_eq!(split(5_400_000, &[60, 40], 3), vec![3_240_000, 2_160_000]);
        assert_eq!(split(100, &[50, 30, 20], 3), vec![50, 30, 20]);
        assert_eq!(split(101, &[50, 30, 20], 3), vec![51, 30, 20]);
        assert_eq!(
            split(1_000, &[50, 30, 20], 2),
            vec![625, 375],
            "two winners share all of it"
        );
        assert_eq!(split(1_000, &[100], 0), Vec::<i64>::new());
        assert_eq!(split(0, &[100], 5), Vec::<i64>::new());
        assert_eq!(split(7, &[34, 33, 33], 3).iter().sum::<i64>(), 7);
    }
}
