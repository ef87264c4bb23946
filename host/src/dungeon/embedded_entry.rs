//! Entering the dungeon with `payFrom: "embedded"` (docs/api.md, "Paying from the embedded
//! wallet"): the server pays the quote — its amount, to the dungeon wallet, with its memo — from
//! the account's embedded wallet, once per quote ([`crate::custodial_payments`]), within the
//! calling key's spend limits, then opens the run exactly as for a client's signature (the same
//! payment check, the same claim).
//!
//! The quote (for the embedded wallet), the day and the class are checked before money moves.
//! A quote the server has paid is honoured once its payment lands, even if the quote expired or
//! the day ended meanwhile, so a landed fee always buys its run: nothing is ever refunded here.
//! A payment nobody comes back for is settled by [`SETTLE_JOB`], which opens its run.

use serde_json::json;

use super::DungeonError;
use super::entry::{self, EnterOutcome, EnterRequest, Freshness};
use crate::api_keys::spend;
use crate::auth::Caller;
use crate::chain::Chain;
use crate::chain::payment::{self, PaymentCheck, PaymentError};
use crate::clock::Clock;
use crate::config::Config;
use crate::crypto::Sealer;
use crate::custodial_payments::{self, Order};
use crate::db::Store;

/// What the payments are recorded under (subject: the quote id).
const PURPOSE: &str = "dungeon_entry";

/// The job that opens the run of a paid quote (subject: the payment's signature) when no call
/// comes back for it.
pub(crate) const SETTLE_JOB: &str = "dungeon_entry.settle";

pub(super) async fn enter(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    config: &Config,
    dungeon_id: &str,
    caller: &Caller,
    request: EnterRequest,
) -> Result<EnterOutcome, DungeonError> {
    let spender = spend::spender(store, Some(caller)).await?;
    if request.tx_signature.is_some() {
        return Err(DungeonError::Invalid(
            "send either `payFrom` or `txSignature`, not both".into(),
        ));
    }
    if let Some(payer) = &request.payer_wallet
        && payer.trim() != spender.wallet.as_str()
    {
        return Err(DungeonError::Invalid(format!(
            "with `payFrom: \"embedded\"` the payer is the embedded wallet {}: omit `payerWallet` or send that address",
            spender.wallet
        )));
    }
    let quote_id = request.quote_id.trim();
    let paid = custodial_payments::recorded(store, PURPOSE, quote_id).await?;
    let freshness = if paid.is_some() {
        Freshness::PaidAlready
    } else {
        Freshness::Unpaid
    };
    let checked = entry::check_quote(
        store,
        clock,
        sealer,
        dungeon_id,
        caller,
        quote_id,
        spender.wallet.as_str(),
        request.class.as_deref(),
        freshness,
    )
    .await?;
    let paid_for = format!("the dungeon {} entry (quote {quote_id})", checked.day.id());
    let order = Order {
        purpose: PURPOSE,
        subject: &checked.quote_id,
        payer: &spender.wallet,
        account_id: &caller.account_id,
        recipient: &chain.dungeon().address.to_string(),
        amount_raw: checked.amount_raw,
        memo: &checked.memo,
        reference: &checked.day.id(),
        detail: json!({"class": checked.class.as_str()}),
        settle_job: SETTLE_JOB,
        payer_name: "the embedded wallet",
        spender: Some((spender.key_id, paid_for.as_str())),
    };
    let signature = custodial_payments::pay_once(store, clock, chain, sealer, &order).await?;
    entry::ensure_unused(store, &signature).await?;
    let landed = payment::check(
        chain,
        store,
        clock.now(),
        &signature,
        &checked.expected(chain),
    )
    .await?;
    if landed == PaymentCheck::Pending {
        return Ok(EnterOutcome::Paying { signature });
    }
    let entered =
        entry::open_run(store, clock, sealer, config, caller, &checked, &signature).await?;
    tracing::info!(
        run_id = entered.run_id,
        dungeon_id,
        account_id = caller.account_id,
        signature,
        "dungeon run opened, paid from the embedded wallet"
    );
    Ok(EnterOutcome::Entered(Box::new(entered)))
}

/// The settling job of the entry payment `signature`: open the run it paid for. Done when the
/// payment is claimed (its run is open), replaced, or can never land; retried while it is not
/// final yet.
pub(crate) async fn settle(
    store: &Store,
    clock: &dyn Clock,
    chain: &Chain,
    sealer: &Sealer,
    config: &Config,
    signature: &str,
) -> anyhow::Result<()> {
    let Some(recorded) = custodial_payments::by_signature(store, signature).await? else {
        return Ok(());
    };
    if custodial_payments::claimed(store, signature).await?
        || custodial_payments::forget_if_dead(store, clock, chain, &recorded)
            .await
            .map_err(|error| anyhow::anyhow!(error))?
    {
        return Ok(());
    }
    let caller = Caller::account(recorded.account_id.clone());
    let class = recorded.detail()["class"].as_str().map(str::to_owned);
    let checked = match entry::check_quote(
        store,
        clock,
        sealer,
        &recorded.reference,
        &caller,
        &recorded.subject,
        &recorded.payer,
        class.as_deref(),
        Freshness::PaidAlready,
    )
    .await
    {
        Ok(checked) => checked,
        // A run was opened with the quote meanwhile (by a call that came back).
        Err(DungeonError::QuoteUsed(_)) => return Ok(()),
        Err(error) => return Err(anyhow::anyhow!(error)),
    };
    match payment::check(
        chain,
        store,
        clock.now(),
        signature,
        &checked.expected(chain),
    )
    .await
    {
        Ok(PaymentCheck::Verified) => {}
        Ok(PaymentCheck::Pending) => {
            anyhow::bail!("the entry payment {signature} is not final yet")
        }
        // It never landed as this payment: nothing bought, nothing to open.
        Err(PaymentError::Rejected(_)) => return Ok(()),
        Err(error) => return Err(anyhow::anyhow!(error)),
    }
    match entry::open_run(store, clock, sealer, config, &caller, &checked, signature).await {
        Ok(entered) => {
            tracing::info!(
                run_id = entered.run_id,
                signature,
                "paid dungeon entry settled: run opened"
            );
            Ok(())
        }
        Err(DungeonError::QuoteUsed(_) | DungeonError::SignatureUsed) => Ok(()),
        Err(error) => Err(anyhow::anyhow!(error)),
    }
}
