//! A tournament as stored and as shown.

use crate::usdc::Usdc;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::rules::{EvaluationMetric, TransferPolicy};
use crate::clock::{from_millis, rfc3339, to_millis};

/// Lifecycle of a tournament; one way only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Upcoming,
    Live,
    Ended,
    Cancelled,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Upcoming => "upcoming",
            Status::Live => "live",
            Status::Ended => "ended",
            Status::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(stored: &str) -> Status {
        match stored {
            "live" => Status::Live,
            "ended" => Status::Ended,
            "cancelled" => Status::Cancelled,
            _ => Status::Upcoming,
        }
    }

    /// The status a tournament really has at `now`, from its stored status and window (epoch
    /// milliseconds): every read shows this, so a tournament whose window has passed reads as
    /// ended even before the scheduler has written the transition.
    pub(crate) fn effective(
        stored: &str,
        start_date: i64,
        end_date: i64,
        now: DateTime<Utc>,
    ) -> Status {
        let now = now.timestamp_millis();
        match Status::parse(stored) {
            Status::Cancelled => Status::Cancelled,
            Status::Ended => Status::Ended,
            _ if now >= end_date => Status::Ended,
            Status::Live => Status::Live,
            _ if now >= start_date => Status::Live,
            _ => Status::Upcoming,
        }
    }
}

/// A tournament row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Tournament {
    pub id: String,
    pub name: String,
    pub description: String,
    #[sqlx(rename = "type")]
    pub kind: String,
    pub visibility: String,
    pub status: String,
    pub entry_fee_raw: i64,
    pub max_participants: i64,
    pub current_participants: i64,
    pub escrow_wallet: String,
    pub payout_split: String,
    pub rake_bps: i64,
    pub is_paper_trading: i64,
    pub start_date: i64,
    pub end_date: i64,
    pub registration_deadline: Option<i64>,
    pub last_snapshot_at: Option<i64>,
    pub created_at: i64,
    pub transfer_policy: String,
    pub evaluation_metric: String,
    /// SHA-256 of a private tournament's invite code; never shown.
    pub invite_code_hash: Option<String>,
    /// Fewer registered wallets at the start cancel and refund a paid tournament (0: off).
    pub min_participants: i64,
    pub cancellation_reason: Option<String>,
    /// Bumped by each manual (dis)qualification, so cached boards are rebuilt.
    pub standings_revision: i64,
}

// In [`COLUMNS`]' order, for reads in place.
crucible_sql::from_row!(Tournament {
    id,
    name,
    description,
    kind,
    visibility,
    status,
    entry_fee_raw,
    max_participants,
    current_participants,
    escrow_wallet,
    payout_split,
    rake_bps,
    is_paper_trading,
    start_date,
    end_date,
    registration_deadline,
    last_snapshot_at,
    created_at,
    transfer_policy,
    evaluation_metric,
    invite_code_hash,
    min_participants,
    cancellation_reason,
    standings_revision,
});

/// Columns of [`Tournament`], for `SELECT`s.
pub(crate) const COLUMNS: &str = "id, name, description, type, visibility, status, entry_fee_raw, max_participants, \
     current_participants, escrow_wallet, payout_split, rake_bps, is_paper_trading, start_date, end_date, \
     registration_deadline, last_snapshot_at, created_at, transfer_policy, evaluation_metric, invite_code_hash, \
     min_participants, cancellation_reason, standings_revision";

impl Tournament {
    /// The status at `now`: the stored one, moved along by the clock if the scheduler has not yet
    /// run the transition (so a read right after an edge is already exact).
    pub(crate) fn status_at(&self, now: DateTime<Utc>) -> Status {
        Status::effective(&self.status, self.start_date, self.end_date, now)
    }

    /// The first instant after `now` at which what is shown of this tournament changes with the
    /// clock alone (its status turns, registration closes, its board turns stale): a cached
    /// answer about it must not outlive it.
    pub(crate) fn next_change_after(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let now_ms = to_millis(now);
        // A board is stale once strictly more than STALE_AFTER has passed: 1 ms later.
        let stale_at = self
            .last_snapshot_at
            .map(|at| at + super::leaderboard::STALE_AFTER.num_milliseconds() + 1);
        [
            Some(self.start_date),
            Some(self.end_date),
            self.registration_deadline,
            stale_at,
        ]
        .into_iter()
        .flatten()
        .filter(|at| *at > now_ms)
        .min()
        .map(crate::clock::from_millis)
    }

    /// Whether the registration deadline has passed at `now` (registration then answers 410).
    pub(crate) fn registration_closed_at(&self, now: DateTime<Utc>) -> bool {
        self.registration_deadline
            .is_some_and(|deadline| to_millis(now) >= deadline)
    }

    /// A public upcoming tournament, for unit tests.
    #[cfg(test)]
    pub fn sample() -> Tournament {
        tests::tournament("upcoming", 1_000, 2_000)
    }

    /// Prize percentages by rank, e.g. `[50, 30, 20]`.
    pub(crate) fn payout_split(&self) -> Vec<u32> {
        serde_json::from_str(&self.payout_split).unwrap_or_else(|_| vec![100])
    }

    /// Entry fees collected so far, less the rake, in raw units.
    pub(crate) fn prize_pool_raw(&self) -> i64 {
        let collected = i128::from(self.entry_fee_raw) * i128::from(self.current_participants);
        let pool = collected * i128::from(10_000 - self.rake_bps.clamp(0, 10_000)) / 10_000;
        i64::try_from(pool).unwrap_or(i64::MAX)
    }

    pub(crate) fn transfer_policy(&self) -> TransferPolicy {
        TransferPolicy::from_stored(&self.transfer_policy)
    }

    pub(crate) fn evaluation_metric(&self) -> EvaluationMetric {
        EvaluationMetric::from_stored(&self.evaluation_metric)
    }

    pub(crate) fn view(&self, now: DateTime<Utc>) -> TournamentView {
        let at = |millis: i64| rfc3339(from_millis(millis));
        TournamentView {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            kind: self.kind.clone(),
            status: self.status_at(now),
            visibility: self.visibility.clone(),
            current_participants: self.current_participants,
            max_participants: self.max_participants,
            escrow_wallet_address: self.escrow_wallet.clone(),
            entry_fee: Usdc::from_raw(self.entry_fee_raw).ui(),
            entry_fee_raw: self.entry_fee_raw.to_string(),
            prize_pool: Usdc::from_raw(self.prize_pool_raw()).ui(),
            payout_split: self.payout_split(),
            rake_percent: self.rake_bps as f64 / 100.0,
            is_paper_trading: self.is_paper_trading != 0,
            start_date: at(self.start_date),
            end_date: at(self.end_date),
            registration_deadline: self.registration_deadline.map(at),
            created_at: at(self.created_at),
            transfer_policy: self.transfer_policy(),
            evaluation_metric: self.evaluation_metric(),
            min_participants: self.min_participants,
            cancellation_reason: self.cancellation_reason.clone(),
            registration_memo: MemoRule {
                format: format!("reg:{}:<h>", self.id),
                hash: "h = first 16 hex characters of SHA-256 over the registered wallets, de-duplicated, \
                       sorted and joined with ','"
                    .into(),
            },
        }
    }
}

/// The public record of a tournament.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentView {
    pub id: String,
    pub name: String,
    pub description: String,
    /// Tournament type, e.g. `highest_pnl`.
    #[serde(rename = "type")]
    pub kind: String,
    pub status: Status,
    /// `public` or `private`.
    pub visibility: String,
    pub current_participants: i64,
    pub max_participants: i64,
    /// Where a paid entry fee is sent.
    pub escrow_wallet_address: String,
    /// Stablecoin per wallet (display units); 0 for free tournaments.
    pub entry_fee: f64,
    /// Entry fee in raw units (6 decimals), as a string.
    pub entry_fee_raw: String,
    /// Entry fees collected less the rake (display units).
    pub prize_pool: f64,
    /// Percent of the pool per final rank, first place first.
    pub payout_split: Vec<u32>,
    pub rake_percent: f64,
    pub is_paper_trading: bool,
    pub start_date: String,
    pub end_date: String,
    pub registration_deadline: Option<String>,
    pub created_at: String,
    /// What an external flow (a deposit or withdrawal after the baseline) does to a wallet:
    /// `adjust` takes it out of the PnL, `disqualify` takes the wallet off the board.
    pub transfer_policy: TransferPolicy,
    /// What the board ranks by: `pnl_percent`, `sharpe`, `sortino` or `calmar`.
    pub evaluation_metric: EvaluationMetric,
    /// A paid tournament with fewer registered wallets at its start is cancelled and every entry
    /// refunded; 0 when the rule is off.
    pub min_participants: i64,
    /// Why a cancelled tournament was cancelled; its paid entries are refunded.
    pub cancellation_reason: Option<String>,
    /// How to build the memo a paid registration's transaction must carry.
    pub(crate) registration_memo: MemoRule,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct MemoRule {
    pub format: String,
    pub hash: String,
}

/// The memo a paid registration must carry: `reg:<id>:<first 16 hex of SHA-256 of
/// the de-duplicated, sorted wallets joined by ','>`. Wallet order never changes it.
pub fn registration_memo(tournament_id: &str, wallets: &[String]) -> String {
    let mut sorted: Vec<&str> = wallets.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let digest = crate::crypto::sha256_hex(sorted.join(","));
    format!("reg:{tournament_id}:{}", &digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn tournament(status: &str, start: i64, end: i64) -> Tournament {
        Tournament {
            id: "trn_1".into(),
            name: "t".into(),
            description: String::new(),
            kind: "highest_pnl".into(),
            visibility: "public".into(),
            status: status.into(),
            entry_fee_raw: 2_500_000,
            max_participants: 10,
            current_participants: 4,
            escrow_wallet: "e".into(),
            payout_split: "[60,40]".into(),
            rake_bps: 1000,
            is_paper_trading: 0,
            start_date: start,
            end_date: end,
            registration_deadline: None,
            last_snapshot_at: None,
            created_at: 0,
            transfer_policy: "adjust".into(),
            evaluation_metric: "pnl_percent".into(),
            invite_code_hash: None,
            min_participants: 0,
            cancellation_reason: None,
            standings_revision: 0,
        }
    }

    #[test]
    fn a_cached_answer_turns_stale_at_the_next_edge_the_clock_crosses() {
        let at = crate::clock::from_millis;
        let mut t = tournament("upcoming", 1_000, 9_000_000);
        t.registration_deadline = Some(500);
        assert_eq!(
            t.next_change_after(at(0)),
            Some(at(500)),
            "registration closes"
        );
        assert_eq!(t.next_change_after(at(500)), Some(at(1_000)), "it starts");
        t.last_snapshot_at = Some(2_000);
        let stale = 2_000 + super::super::leaderboard::STALE_AFTER.num_milliseconds() + 1;
        assert_eq!(
            t.next_change_after(at(1_000)),
            Some(at(stale)),
            "its board turns stale"
        );
        assert_eq!(
            t.next_change_after(at(stale)),
            Some(at(9_000_000)),
            "it ends"
        );
        assert_eq!(
            t.next_change_after(at(9_000_000)),
            None,
            "nothing left to turn"
        );
    }

    #[test]
    fn the_clock_moves_a_status_forward_never_back() {
        let t = tournament("upcoming", 1_000, 2_000);
        assert_eq!(t.status_at(from_millis(999)), Status::Upcoming);
        assert_eq!(t.status_at(from_millis(1_000)), Status::Live);
        assert_eq!(t.status_at(from_millis(2_000)), Status::Ended);
        assert_eq!(
            tournament("ended", 1_000, 2_000).status_at(from_millis(0)),
            Status::Ended
        );
        assert_eq!(
            tournament("cancelled", 1_000, 2_000).status_at(from_millis(1_500)),
            Status::Cancelled
        );
    }

    #[test]
    fn prize_pool_is_fees_less_rake() {
        let t = tournament("live", 0, 1);
        assert_eq!(t.prize_pool_raw(), 9_000_000);
        assert_eq!(t.view(from_millis(0)).prize_pool, 9.0);
        assert_eq!(t.payout_split(), vec![60, 40]);
    }

    #[test]
    fn memo_ignores_wallet_order_and_duplicates() {
        let a = registration_memo("trn_1", &["b".into(), "a".into()]);
        let b = registration_memo("trn_1", &["a".into(), "b".into(), "a".into()]);
        assert_eq!(a, b);
        assert!(a.starts_with("reg:trn_1:"));
        assert_eq!(a.len(), "reg:trn_1:".len() + 16);
        assert_ne!(a, registration_memo("trn_2", &["a".into(), "b".into()]));
    }
}
