//! Building, signing and sending a token transfer: create the recipient's associated token
//! account if needed (idempotent), `TransferChecked`, then a Memo. Used by prize payouts and
//! by `crucible wallet pay`.

use super::ChainError;
use super::keypair::Keypair;
use super::rpc::{RpcClient, TokenFilter};
use super::tx::{self, Message, Pubkey, Transaction, instructions};
use crate::domain::WalletAddress;

pub(crate) async fn transfer_token(
    rpc: &RpcClient,
    from: &Keypair,
    to_wallet: &WalletAddress,
    mint: &str,
    amount_raw: u64,
    memo: &str,
) -> Result<String, ChainError> {
    let transaction = sign_token_transfer(rpc, from, to_wallet, mint, amount_raw, memo).await?;
    rpc.send_transaction(&transaction.serialize()?).await
}

/// Build and sign the transfer without sending it: its signature is known before it reaches
/// the network, so a caller can record it first and never pay twice after a crash.
pub async fn sign_token_transfer(
    rpc: &RpcClient,
    from: &Keypair,
    to_wallet: &WalletAddress,
    mint: &str,
    amount_raw: u64,
    memo: &str,
) -> Result<Transaction, ChainError> {
    let (transaction, _) =
        sign_token_transfer_expiring(rpc, from, to_wallet, mint, amount_raw, memo).await?;
    Ok(transaction)
}

/// [`sign_token_transfer`], with the last block height at which the transfer can land.
pub(crate) async fn sign_token_transfer_expiring(
    rpc: &RpcClient,
    from: &Keypair,
    to_wallet: &WalletAddress,
    mint: &str,
    amount_raw: u64,
    memo: &str,
) -> Result<(Transaction, u64), ChainError> {
    let payer = from.pubkey();
    let mint_key: Pubkey = mint.parse()?;
    // The payer's own token account tells the token program and the decimals of the mint.
    let accounts = rpc
        .get_token_accounts_by_owner(&payer.to_string(), TokenFilter::Mint(mint))
        .await?;
    let source = accounts
        .iter()
        .filter(|a| a.amount >= amount_raw)
        .max_by_key(|a| a.amount)
        .ok_or_else(|| {
            let held: u64 = accounts.iter().map(|a| a.amount).sum();
            ChainError::Transfer(format!(
                "{payer} holds {held} raw units of {mint} in its largest account, {amount_raw} needed"
            ))
        })?;
    let token_program: Pubkey = source.program.parse()?;
    if !tx::is_token_program(&token_program) {
        return Err(ChainError::Transfer(format!(
            "{} is not a token program",
            source.program
        )));
    }
    let recipient = Pubkey::from(to_wallet);
    let destination = tx::associated_token_address(&recipient, &mint_key, &token_program);
    let ixs = [
        instructions::create_associated_token_account_idempotent(
            &payer,
            &recipient,
            &mint_key,
            &token_program,
        ),
        instructions::token_transfer_checked(
            &token_program,
            &source.address.parse()?,
            &mint_key,
            &destination,
            &payer,
            amount_raw,
            source.decimals,
        ),
        instructions::memo(memo, &[]),
    ];
    let recent = rpc.get_recent_blockhash().await?;
    let message = Message::new_legacy(&ixs, &payer, recent.hash);
    Ok((
        Transaction::sign(message, &[from.signing_key()])?,
        recent.last_valid_block_height,
    ))
}
