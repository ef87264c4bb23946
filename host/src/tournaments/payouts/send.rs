//! Sending one payout, exactly once, whatever crashes, restarts, slow RPC calls or second nodes
//! do (`docs/payouts.md`).
//!
//! - **One worker at a time.** A worker takes the payout's lease, which bumps its fencing token;
//!   every later write of that worker is conditioned on the token, so a worker that stalled past
//!   its lease (and was replaced) can no longer record anything.
//! - **Recorded before sent.** A transfer is signed, then its signature, wire bytes and last valid
//!   block height are recorded, and only then sent. A retry resends those same bytes (a
//!   transaction lands at most once) until the chain's block height has passed their last valid
//!   height; only then, with the signature still absent, may a new transfer be signed.
//! - **`sent` means finalized.** A payout stays `pending` until its transfer is finalized.

use std::time::Duration as StdDuration;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use chrono::Duration;

use super::model::{PayoutStatus, SourceKind};
use crate::chain::rpc::SignatureStatus;
use crate::chain::{Keypair, SignedTransfer};
use crate::clock::to_millis;
use crate::crypto::new_id;
use crate::domain::WalletAddress;

/// Legacy rows (signed before the last valid block height was recorded): after this long
/// unseen, the blockhash has surely expired (≈ 150 slots, with margin).
const RESIGN_AFTER: Duration = Duration::minutes(2);
/// After sending, how often and how many times the worker asks for finality before leaving
/// the rest to the job's retry (a real cluster finalizes in about 13 s).
const FINALITY_POLL: StdDuration = StdDuration::from_secs(1);
const FINALITY_POLLS: u32 = 20;

/// A payout as the worker that leased it reads it.
#[derive(Debug, sqlx::FromRow)]
struct Payout {
    wallet: String,
    amount_raw: i64,
    mint: String,
    #[sqlx(try_from = "String")]
    status: PayoutStatus,
    tx_signature: Option<String>,
    signed_wire: Option<String>,
    last_valid_block_height: Option<i64>,
    last_attempt_at: Option<i64>,
    #[sqlx(try_from = "String")]
    source_kind: SourceKind,
    source_id: String,
    fence: i64,
}

/// What sending a payout touches: its rows, the clock, the chain and the wallets that pay
/// (escrow, dungeon), the bus (a board shows each prize once final) and the node's name (a
/// lease names its node, so a node shutting down releases what it holds).
#[derive(Clone, Copy)]
pub struct Payer<'a> {
    pub store: &'a crate::db::Store,
    pub clock: &'a dyn crate::clock::Clock,
    pub chain: &'a crate::chain::Chain,
    pub events: &'a crate::events::Bus,
    pub node_id: &'a str,
    /// How long a worker holds a payout; renewed at every step, so only a stalled worker
    /// loses it (`Leases::payouts`).
    pub lease: Duration,
}

impl Payer<'_> {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }
}

/// A payout leased to this worker: `fence` guards every write it makes.
struct Lease<'a> {
    payer: Payer<'a>,
    payout_id: &'a str,
    owner: String,
    fence: i64,
}

impl<'a> Lease<'a> {
    /// Take the payout if it is pending and nobody holds it (or their lease ran out).
    /// `Ok(None)`: nothing to do (unknown, sent or failed); an error while another worker holds
    /// it, so the job comes back later and finds it done.
    async fn take(payer: Payer<'a>, payout_id: &'a str) -> anyhow::Result<Option<(Self, Payout)>> {
        let now = to_millis(payer.now());
        // Prefixed with the node, so a node shutting down can release what it holds.
        let owner = format!("{}:{}", payer.node_id, new_id("pw"));
        let taken: Option<Payout> = sqlx::query_as(
            "UPDATE payouts SET lease_owner = $1, lease_until = $2, fence = fence + 1
             WHERE id = $3 AND status = 'pending' AND (lease_until IS NULL OR lease_until <= $4)
             RETURNING wallet, amount_raw, mint, status, tx_signature, signed_wire,
                       last_valid_block_height, last_attempt_at, source_kind, source_id, fence",
        )
        .bind(&owner)
        .bind(now + payer.lease.num_milliseconds())
        .bind(payout_id)
        .bind(now)
        .fetch_optional(payer.store.write())
        .await?;
        if let Some(payout) = taken {
            let fence = payout.fence;
            return Ok(Some((
                Lease {
                    payer,
                    payout_id,
                    owner,
                    fence,
                },
                payout,
            )));
        }
        let status: Option<String> = sqlx::query_scalar("SELECT status FROM payouts WHERE id = $1")
            .bind(payout_id)
            .fetch_optional(payer.store.read())
            .await?;
        match status.map(PayoutStatus::try_from).transpose()? {
            Some(PayoutStatus::Pending) => {
                bail!("payout {payout_id} is being sent by another worker")
            }
            Some(PayoutStatus::Sent | PayoutStatus::Failed) | None => Ok(None),
        }
    }

    /// Run a write only while this worker still holds the lease; it also extends the lease.
    /// Refused (nothing written) once another worker has taken the payout over.
    async fn write(
        &self,
        sql: &str,
        bind: impl FnOnce(Query<'_>) -> Query<'_>,
    ) -> anyhow::Result<()> {
        let now = to_millis(self.payer.now());
        let sql = format!(
            "UPDATE payouts SET lease_until = $1, {sql} WHERE id = $2 AND fence = $3 AND lease_owner = $4 AND status = 'pending'"
        );
        let query = sqlx::query(&sql)
            .bind(now + self.payer.lease.num_milliseconds())
            .bind(self.payout_id)
            .bind(self.fence)
            .bind(&self.owner);
        let done = bind(query).execute(self.payer.store.write()).await?;
        if done.rows_affected() != 1 {
            bail!(
                "payout {} was taken over by another worker (fence {} is stale); stopping",
                self.payout_id,
                self.fence
            );
        }
        Ok(())
    }

    async fn renew(&self) -> anyhow::Result<()> {
        self.write("fence = fence", |q| q).await
    }

    /// Let the next worker in at once (a retry, another node); a no-op once fenced out.
    async fn release(&self) {
        let released = sqlx::query(
            "UPDATE payouts SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND fence = $2 AND lease_owner = $3",
        )
        .bind(self.payout_id)
        .bind(self.fence)
        .bind(&self.owner)
        .execute(self.payer.store.write())
        .await;
        if let Err(error) = released {
            // The lease then simply runs out.
            tracing::warn!(payout_id = self.payout_id, %error, "payout lease not released");
        }
    }

    async fn mark_sent(&self, signature: &str) -> anyhow::Result<()> {
        let now = to_millis(self.payer.now());
        self.write(
            "status = 'sent', tx_signature = $5, sent_at = $6, last_error = NULL",
            |q| q.bind(signature.to_owned()).bind(now),
        )
        .await?;
        tracing::info!(
            payout_id = self.payout_id,
            signature,
            "payout sent (finalized)"
        );
        Ok(())
    }

    async fn note_error(&self, message: &str) -> anyhow::Result<()> {
        let message: String = message.chars().take(2000).collect();
        self.write("last_error = $5", |q| q.bind(message)).await
    }
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Send one payout (the `payout.send` job). Errors leave it `pending` for the job to retry.
pub async fn send(payer: Payer<'_>, payout_id: &str) -> anyhow::Result<()> {
    let Some((lease, payout)) = Lease::take(payer, payout_id).await? else {
        return Ok(());
    };
    let outcome = pay(&lease, &payout).await;
    lease.release().await;
    if outcome.is_ok() && payout.source_kind == SourceKind::Tournament {
        // The board of an ended tournament shows each prize's transfer once it is final.
        payer
            .events
            .publish(crate::events::Event::LeaderboardChanged {
                tournament_id: payout.source_id.clone(),
            });
    }
    outcome
}

/// The first half of [`send`]: take the payout, sign a transfer and record it, without sending
/// it. On its own it leaves exactly what a worker that crashed before sending leaves (a lease
/// that runs out, a recorded transfer nobody sent), so tests can stop a worker there. Returns
/// the recorded signature.
pub async fn sign_and_record(payer: Payer<'_>, payout_id: &str) -> anyhow::Result<String> {
    let (lease, payout) = Lease::take(payer, payout_id)
        .await?
        .ok_or_else(|| anyhow!("payout {payout_id} is not pending"))?;
    let signed = sign_new(&lease, &payout).await?;
    Ok(signed.signature)
}

async fn pay(lease: &Lease<'_>, payout: &Payout) -> anyhow::Result<()> {
    debug_assert_eq!(payout.status, PayoutStatus::Pending);
    let payer = lease.payer;
    if let Some(signature) = &payout.tx_signature {
        match payer
            .chain
            .signature_status(signature)
            .await
            .context("checking the recorded transfer")?
        {
            Some(seen) if seen.err.is_none() => {
                return confirm(lease, signature, Some(seen)).await;
            }
            Some(seen) => {
                // A failed transaction has used its signature: it can never land again.
                tracing::warn!(
                    payout_id = lease.payout_id,
                    signature,
                    err = ?seen.err,
                    "the recorded payout transfer failed on chain; signing anew"
                );
            }
            None => {
                if can_still_land(lease, payout).await? {
                    return resend(lease, payout, signature).await;
                }
                // Expired: look once more, now that nothing signed with it can land any more.
                if let Some(seen) = payer.chain.signature_status(signature).await?
                    && seen.err.is_none()
                {
                    return confirm(lease, signature, Some(seen)).await;
                }
            }
        }
    }
    let signed = sign_new(lease, payout).await?;
    submit(lease, &signed.signature, &signed.wire).await
}

/// Whether the recorded, unseen transfer may still land: the chain's finalized block height has
/// not passed its last valid height. Legacy rows without one wait [`RESIGN_AFTER`].
async fn can_still_land(lease: &Lease<'_>, payout: &Payout) -> anyhow::Result<bool> {
    match payout.last_valid_block_height {
        Some(last_valid) => {
            let height = lease
                .payer
                .chain
                .block_height()
                .await
                .context("reading the block height")?;
            Ok(i64::try_from(height).unwrap_or(i64::MAX) <= last_valid)
        }
        None => {
            let attempted = payout.last_attempt_at.unwrap_or(0);
            Ok(to_millis(lease.payer.now()) - attempted < RESIGN_AFTER.num_milliseconds())
        }
    }
}

/// Send the recorded bytes again (after a crash between recording and sending, or a send the
/// node lost). Without them (a legacy row) there is nothing to resend: wait for expiry.
async fn resend(lease: &Lease<'_>, payout: &Payout, signature: &str) -> anyhow::Result<()> {
    let Some(wire) = &payout.signed_wire else {
        bail!("transfer {signature} not seen yet; waiting until it can no longer land");
    };
    let wire = base64::engine::general_purpose::STANDARD
        .decode(wire)
        .context("the recorded transfer is not base64")?;
    tracing::info!(
        payout_id = lease.payout_id,
        signature,
        "resending the recorded payout transfer"
    );
    submit(lease, signature, &wire).await
}

/// Sign a new transfer from the payout's source wallet and record it (fenced) before anything
/// is sent.
async fn sign_new(lease: &Lease<'_>, payout: &Payout) -> anyhow::Result<SignedTransfer> {
    let payer = lease.payer;
    let from = source_key(payer, payout).await?;
    let to = WalletAddress::parse(&payout.wallet).map_err(anyhow::Error::msg)?;
    let amount = u64::try_from(payout.amount_raw).context("negative payout")?;
    let signed = payer
        .chain
        .sign_token_transfer(
            from,
            &to,
            &payout.mint,
            amount,
            &match payout.source_kind {
                SourceKind::Refund => format!("refund:{}", lease.payout_id),
                SourceKind::Tournament | SourceKind::Dungeon => {
                    format!("payout:{}", lease.payout_id)
                }
            },
        )
        .await
        .context("signing the payout")?;
    let wire = base64::engine::general_purpose::STANDARD.encode(&signed.wire);
    let now = to_millis(payer.now());
    let last_valid = i64::try_from(signed.last_valid_block_height).unwrap_or(i64::MAX);
    lease
        .write(
            "tx_signature = $5, signed_wire = $6, last_valid_block_height = $7,
             attempts = attempts + 1, last_attempt_at = $8",
            |q| {
                q.bind(signed.signature.clone())
                    .bind(wire)
                    .bind(last_valid)
                    .bind(now)
            },
        )
        .await?;
    Ok(signed)
}

/// The key that pays: tournament prizes and refunds come from the escrow recorded with the
/// tournament (the one that took its fees), dungeon prizes from the dungeon wallet. Never any
/// other wallet.
async fn source_key<'s>(payer: Payer<'s>, payout: &Payout) -> anyhow::Result<&'s Keypair> {
    let (wallet, role) = match payout.source_kind {
        SourceKind::Dungeon => (payer.chain.dungeon(), "dungeon wallet"),
        SourceKind::Tournament | SourceKind::Refund => {
            let (recorded,): (String,) =
                sqlx::query_as("SELECT escrow_wallet FROM tournaments WHERE id = $1")
                    .bind(&payout.source_id)
                    .fetch_one(payer.store.read())
                    .await
                    .context("reading the tournament's escrow")?;
            let escrow = payer.chain.escrow();
            if escrow.address.as_str() != recorded {
                bail!(
                    "tournament {} took its fees into escrow {recorded}, but this server's escrow is {}; \
                     its prizes are paid only from {recorded}",
                    payout.source_id,
                    escrow.address
                );
            }
            (escrow, "escrow")
        }
    };
    wallet
        .keypair()
        .ok_or_else(|| anyhow!("this server does not hold the {role} key, so it cannot pay prizes"))
}

/// Send `wire` and wait for its finality.
async fn submit(lease: &Lease<'_>, signature: &str, wire: &[u8]) -> anyhow::Result<()> {
    lease.renew().await?;
    if let Err(error) = lease.payer.chain.send_signed(wire).await {
        let message = format!("{error}");
        // "Already processed" means an earlier send landed: finality decides below.
        if !message.contains("already been processed") {
            lease.note_error(&message).await?;
            bail!("sending the payout failed: {message}");
        }
    }
    confirm(lease, signature, None).await
}

/// Mark the payout `sent` once `signature` is finalized, polling a little; otherwise leave it
/// `pending` for the job's next attempt (which finds the signature and comes back here).
async fn confirm(
    lease: &Lease<'_>,
    signature: &str,
    mut seen: Option<SignatureStatus>,
) -> anyhow::Result<()> {
    for poll in 0..=FINALITY_POLLS {
        if seen.is_none() || poll > 0 {
            seen = lease.payer.chain.signature_status(signature).await?;
        }
        match &seen {
            Some(status) if status.err.is_some() => {
                let message = format!(
                    "the payout transfer {signature} failed on chain: {:?}",
                    status.err
                );
                lease.note_error(&message).await?;
                bail!(message);
            }
            Some(status) if status.is_finalized() => return lease.mark_sent(signature).await,
            _ => {}
        }
        if poll < FINALITY_POLLS {
            tokio::time::sleep(FINALITY_POLL).await;
            lease.renew().await?;
        }
    }
    bail!("payout transfer {signature} sent; not finalized yet")
}
