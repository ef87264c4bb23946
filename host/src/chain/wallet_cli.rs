//! `crucible wallet new | airdrop | pay | swap`: make a keypair, fund it on simnet, pay an entry
//! (create the recipient's token account if needed, transferChecked + memo, signed and sent),
//! and swap SOL/USDC through the simnet pool (`chain::swap`) — so an operator needs no other
//! Solana tooling. Talks JSON-RPC to the local server's simnet by
//! default, to any node with `--rpc`.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::keypair::Keypair;
use super::rpc::RpcClient;
use super::{pool, simnet, swap, transfer, tx};
use crate::domain::WalletAddress;

pub(crate) const DEFAULT_RPC: &str = "http://127.0.0.1:8080/simnet/rpc";

#[derive(Debug, Args)]
pub(crate) struct WalletArgs {
    #[command(subcommand)]
    pub command: WalletCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum WalletCommand {
    /// Generate a keypair (Solana CLI JSON format) and print its address.
    New {
        /// Write the keypair here (refuses to overwrite); without it the JSON is printed.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Fund an address on simnet with SOL and/or the simnet stablecoin.
    Airdrop {
        address: String,
        /// SOL to mint (e.g. 1 or 0.05).
        #[arg(long, default_value = "1")]
        sol: String,
        /// Stablecoin (USDC) to mint, in UI units (e.g. 25 or 12.5).
        #[arg(long)]
        usdc: Option<String>,
        #[arg(long, default_value = DEFAULT_RPC)]
        rpc: String,
    },
    /// Pay USDC with a memo; prints the transaction signature.
    Pay {
        /// Keypair file of the paying wallet (Solana CLI JSON).
        #[arg(long)]
        keypair: PathBuf,
        /// Recipient wallet address (its associated token account is created if needed).
        #[arg(long)]
        to: String,
        /// Amount in UI units (e.g. 10 or 2.5).
        #[arg(long)]
        usdc: String,
        /// Memo text, e.g. the registration memo a quote returned.
        #[arg(long)]
        memo: String,
        /// Stablecoin mint; defaults to the simnet mint for a `/simnet/rpc` URL, else mainnet USDC.
        #[arg(long)]
        mint: Option<String>,
        #[arg(long, default_value = DEFAULT_RPC)]
        rpc: String,
    },
    /// Swap SOL for USDC or USDC for SOL through the Crucible pool (simnet); prints the
    /// signature and the amounts once confirmed.
    Swap {
        /// Keypair file of the swapping wallet (Solana CLI JSON).
        #[arg(long)]
        keypair: PathBuf,
        /// The token sold: SOL or USDC.
        #[arg(long, value_parser = ["SOL", "USDC", "sol", "usdc"])]
        sell: String,
        /// Amount sold, in UI units (e.g. 0.5 SOL or 25 USDC).
        #[arg(long)]
        amount: String,
        /// Least accepted of the bought token, in UI units; default: the quote less 1 %.
        #[arg(long)]
        min_out: Option<String>,
        #[arg(long, default_value = DEFAULT_RPC)]
        rpc: String,
    },
}

/// Parse a decimal UI amount into raw units without floating point ("1.5", 6 → 1_500_000).
pub(crate) fn parse_ui_amount(text: &str, decimals: u8) -> Result<u64, String> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits_only = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_only(whole) || !digits_only(fraction) {
        return Err(format!("`{text}` is not a positive decimal amount"));
    }
    if fraction.len() > usize::from(decimals) {
        return Err(format!("`{text}` has more than {decimals} decimal places"));
    }
    let scale = 10u64.pow(u32::from(decimals));
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole
            .parse()
            .map_err(|_| format!("`{text}` is too large"))?
    };
    let fraction: u64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<width$}", width = usize::from(decimals))
            .parse()
            .map_err(|_| format!("`{text}` is not a decimal amount"))?
    };
    whole
        .checked_mul(scale)
        .and_then(|w| w.checked_add(fraction))
        .ok_or_else(|| format!("`{text}` is too large"))
}

fn default_mint(rpc: &str) -> String {
    if rpc.trim_end_matches('/').ends_with("/simnet/rpc") {
        simnet::default_stablecoin_mint().to_string()
    } else {
        tx::MAINNET_USDC_MINT.to_owned()
    }
}

pub(crate) async fn run(args: WalletArgs) -> anyhow::Result<()> {
    match args.command {
        WalletCommand::New { out } => {
            let keypair = Keypair::generate();
            match out {
                Some(path) => {
                    keypair.write_new(&path)?;
                    println!("{}", keypair.pubkey());
                    eprintln!("keypair written to {}", path.display());
                }
                None => {
                    println!("{}", keypair.pubkey());
                    println!("{}", keypair.to_json());
                }
            }
        }
        WalletCommand::Airdrop {
            address,
            sol,
            usdc,
            rpc,
        } => {
            let address = WalletAddress::parse(&address).map_err(anyhow::Error::msg)?;
            let lamports = parse_ui_amount(&sol, 9).map_err(anyhow::Error::msg)?;
            let stablecoin = usdc
                .map(|u| parse_ui_amount(&u, simnet::STABLECOIN_DECIMALS))
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let client = RpcClient::new(rpc)?;
            let signature = client
                .request_airdrop(address.as_str(), lamports, stablecoin)
                .await
                .context("airdrop failed")?;
            println!("{signature}");
        }
        WalletCommand::Pay {
            keypair,
            to,
            usdc,
            memo,
            mint,
            rpc,
        } => {
            let keypair = Keypair::read(&keypair)?;
            let to = WalletAddress::parse(&to).map_err(anyhow::Error::msg)?;
            let mint = mint.unwrap_or_else(|| default_mint(&rpc));
            let client = RpcClient::new(rpc)?;
            // USDC and the simnet stablecoin both have 6 decimals; the transfer itself is
            // `TransferChecked` against the mint's real decimals, read from the payer's account.
            let amount = parse_ui_amount(&usdc, 6).map_err(anyhow::Error::msg)?;
            let signature = transfer::transfer_token(&client, &keypair, &to, &mint, amount, &memo)
                .await
                .context("payment failed")?;
            println!("{signature}");
        }
        WalletCommand::Swap {
            keypair,
            sell,
            amount,
            min_out,
            rpc,
        } => {
            let keypair = Keypair::read(&keypair)?;
            let direction = if sell.eq_ignore_ascii_case("SOL") {
                pool::Direction::SellSol
            } else {
                pool::Direction::SellUsdc
            };
            let client = RpcClient::new(rpc)?;
            let view = swap::read_pool(&client).await?;
            let (in_decimals, out_decimals) = view.decimals(direction);
            let amount_in = parse_ui_amount(&amount, in_decimals).map_err(anyhow::Error::msg)?;
            let minimum = min_out
                .map(|m| parse_ui_amount(&m, out_decimals))
                .transpose()
                .map_err(anyhow::Error::msg)?;
            let quote = swap::quote(&view, direction, amount_in, minimum)?;
            let receipt = swap::swap(&client, &keypair, &view, direction, amount_in, &quote)
                .await
                .context("swap failed")?;
            let (sold, bought) = match direction {
                pool::Direction::SellSol => ("SOL", "USDC"),
                pool::Direction::SellUsdc => ("USDC", "SOL"),
            };
            let ui = |raw: u64, decimals: u8| {
                simnet::render::ui_amount(raw, decimals)["uiAmountString"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            };
            println!("{}", receipt.signature);
            println!(
                "sold {} {sold} for {} {bought} (quoted {}, minimum {})",
                ui(receipt.amount_in, in_decimals),
                ui(receipt.amount_out, out_decimals),
                ui(quote.expected_out, out_decimals),
                ui(receipt.minimum_out, out_decimals),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_amounts_parse_exactly() {
        assert_eq!(parse_ui_amount("1.5", 6), Ok(1_500_000));
        assert_eq!(parse_ui_amount("25", 6), Ok(25_000_000));
        assert_eq!(parse_ui_amount("0.000001", 6), Ok(1));
        assert_eq!(parse_ui_amount(".5", 6), Ok(500_000));
        assert_eq!(parse_ui_amount("0.05", 9), Ok(50_000_000));
        assert!(parse_ui_amount("0.0000001", 6).is_err());
        assert!(parse_ui_amount("-1", 6).is_err());
        assert!(parse_ui_amount("1e3", 6).is_err());
        assert!(parse_ui_amount("", 6).is_err());
        assert!(parse_ui_amount("99999999999999999999", 6).is_err());
    }
}
