//! `crucible tournament create|list|cancel`: a platform host's tools, on the same database as a
//! running server (which picks new tournaments up: their lifecycle jobs are rows).

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};

use super::queries::{self, ListQuery, NewTournament};
use super::rules::{EvaluationMetric, TransferPolicy};
use crate::config::StorageArgs;
use crate::crypto::new_id;
use crate::usdc::{UNIT as USDC_UNIT, Usdc};

#[derive(Debug, Subcommand)]
pub(crate) enum TournamentCommand {
    /// Create a tournament and print its id.
    Create(CreateArgs),
    /// List tournaments (newest first), private and cancelled ones included.
    List(#[command(flatten)] StorageArgs),
    /// Cancel a tournament that has not ended.
    Cancel {
        id: String,
        #[command(flatten)]
        storage: StorageArgs,
    },
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    #[arg(long)]
    name: String,
    /// Tournament type, e.g. highest_pnl.
    #[arg(long = "type", default_value = "highest_pnl")]
    kind: String,
    /// Entry fee per wallet in USDC, e.g. 2.5 (0 for a free tournament).
    #[arg(long, value_parser = parse_usdc)]
    entry_fee: i64,
    #[arg(long)]
    max_participants: i64,
    /// RFC 3339, e.g. 2026-12-01T00:00:00Z.
    #[arg(long)]
    starts_at: DateTime<Utc>,
    #[arg(long)]
    ends_at: DateTime<Utc>,
    /// RFC 3339; registration answers 410 from then on (default: open until the end).
    #[arg(long)]
    registration_deadline: Option<DateTime<Utc>>,
    /// A paid tournament with fewer registered wallets at its start is cancelled and every
    /// entry refunded; 0 turns that off. Default: off for a free tournament (the rule only
    /// applies to paid ones), 2 for a paid one (or the maximum, if that is smaller).
    #[arg(long)]
    min_participants: Option<i64>,
    /// `private`: listed nowhere, and shown or registrable only with the invite code this
    /// command prints (once: only its hash is kept).
    #[arg(long, default_value = "public", value_parser = ["public", "private"])]
    visibility: String,
    #[arg(long, default_value = "")]
    description: String,
    /// Percent of the pool per rank, comma-separated; must add up to 100.
    #[arg(long, default_value = "50,30,20", value_delimiter = ',')]
    payout_split: Vec<u32>,
    /// Percent of the entry fees kept by the platform.
    #[arg(long, default_value_t = 10.0)]
    rake_percent: f64,
    /// What a deposit or withdrawal after a wallet's baseline does: `adjust` takes it out of
    /// the PnL, `disqualify` takes the wallet off the board.
    #[arg(long, default_value = "adjust", value_parser = TransferPolicy::parse)]
    transfer_policy: TransferPolicy,
    /// What the board ranks by: pnl_percent, sharpe, sortino or calmar.
    #[arg(long, default_value = "pnl_percent", value_parser = EvaluationMetric::parse)]
    evaluation_metric: EvaluationMetric,
    #[command(flatten)]
    storage: StorageArgs,
}

/// The minimum a tournament gets when `--min-participants` is not given: the rule cancels only
/// paid tournaments, so a free one has it off; a paid one needs two wallets, or all of its
/// seats if it has fewer.
fn default_min_participants(entry_fee_raw: i64, max_participants: i64) -> i64 {
    if entry_fee_raw > 0 {
        max_participants.clamp(0, 2)
    } else {
        0
    }
}

/// A USDC amount with at most 6 decimals, to raw units, exactly.
pub(crate) fn parse_usdc(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if !digits(whole) || (!fraction.is_empty() && !digits(fraction)) || fraction.len() > 6 {
        return Err(format!(
            "`{text}` is not a USDC amount (digits, at most 6 decimals)"
        ));
    }
    let whole: i64 = whole
        .parse()
        .map_err(|_| format!("`{text}` is too large"))?;
    let fraction: i64 = format!("{fraction:0<6}")
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    whole
        .checked_mul(USDC_UNIT)
        .and_then(|raw| raw.checked_add(fraction))
        .ok_or_else(|| format!("`{text}` is too large"))
}

pub(crate) async fn run(command: TournamentCommand) -> anyhow::Result<()> {
    match command {
        TournamentCommand::Create(args) => {
            let state = crate::startup::offline_state(&args.storage).await?;
            let escrow = state.chain.escrow().address.to_string();
            let invite = (args.visibility == "private").then(super::privacy::new_invite_code);
            let new = NewTournament {
                id: new_id("trn"),
                name: args.name,
                description: args.description,
                kind: args.kind,
                visibility: args.visibility,
                entry_fee_raw: args.entry_fee,
                max_participants: args.max_participants,
                escrow_wallet: escrow.clone(),
                payout_split: args.payout_split,
                rake_bps: (args.rake_percent * 100.0).round() as i64,
                is_paper_trading: false,
                transfer_policy: args.transfer_policy,
                evaluation_metric: args.evaluation_metric,
                start_date: args.starts_at,
                end_date: args.ends_at,
                series: None,
                registration_deadline: args.registration_deadline,
                invite_code_hash: invite.as_ref().map(|(_, hash)| hash.clone()),
                min_participants: args.min_participants.unwrap_or_else(|| {
                    default_min_participants(args.entry_fee, args.max_participants)
                }),
            };
            new.validate().map_err(|why| anyhow::anyhow!(why))?;
            let mut tx = state.store.begin().await?;
            queries::insert(&mut tx, &new, state.now()).await?;
            tx.commit().await?;
            crate::events::relay::tell_running_nodes(
                &state.store,
                vec![crate::events::Event::TournamentsChanged],
            )
            .await;
            println!("{}", new.id);
            if let Some((code, _)) = invite {
                // On its own line so scripts can read it; it is not stored and cannot be shown again.
                println!("invite code: {code}");
            }
        }
        TournamentCommand::List(storage) => {
            let state = crate::startup::offline_state(&storage).await?;
            let now = state.now();
            println!(
                "{:<28} {:<10} {:>10} {:>9}  {:<20} {:<20} NAME",
                "ID", "STATUS", "FEE USDC", "PLAYERS", "START", "END"
            );
            for visibility in ["public", "private"] {
                let query = ListQuery {
                    visibility: Some(visibility.into()),
                    page_size: 1000,
                    descending: true,
                    ..ListQuery::default()
                };
                let (rows, _) = queries::list(&state.store, &query, now).await?;
                for t in rows {
                    println!(
                        "{:<28} {:<10} {:>10} {:>4}/{:<4}  {:<20} {:<20} {}{}",
                        t.id,
                        t.status_at(now).as_str(),
                        Usdc::from_raw(t.entry_fee_raw).ui(),
                        t.current_participants,
                        t.max_participants,
                        crate::clock::from_millis(t.start_date).format("%Y-%m-%d %H:%M"),
                        crate::clock::from_millis(t.end_date).format("%Y-%m-%d %H:%M"),
                        t.name,
                        if visibility == "private" {
                            " (private)"
                        } else {
                            ""
                        },
                    );
                }
            }
        }
        TournamentCommand::Cancel { id, storage } => {
            let state = crate::startup::offline_state(&storage).await?;
            if super::lifecycle::cancel(
                &state.store,
                &*state.clock,
                &state.events,
                &state.chain,
                &id,
            )
            .await?
            {
                crate::events::relay::tell_running_nodes(
                    &state.store,
                    vec![crate::events::Event::TournamentEnded {
                        tournament_id: id.clone(),
                    }],
                )
                .await;
                println!("cancelled {id}");
            } else {
                anyhow::bail!(
                    "no tournament `{id}` that can still be cancelled (unknown, ended or already cancelled)"
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usdc_amounts_parse_exactly() {
        assert_eq!(parse_usdc("0"), Ok(0));
        assert_eq!(parse_usdc("2.5"), Ok(2_500_000));
        assert_eq!(parse_usdc("1.000001"), Ok(1_000_001));
        assert!(parse_usdc("1.0000001").is_err());
        assert!(parse_usdc("-1").is_err());
        assert!(parse_usdc("1e3").is_err());
        assert!(parse_usdc("").is_err());
    }

    #[test]
    fn the_default_minimum_fits_the_tournament() {
        assert_eq!(default_min_participants(0, 1), 0, "free: off");
        assert_eq!(default_min_participants(0, 64), 0, "free: off");
        assert_eq!(default_min_participants(1_000_000, 1), 1, "paid, one seat");
        assert_eq!(default_min_participants(1_000_000, 64), 2, "paid");
    }
}
