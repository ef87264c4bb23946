//! Leased work: how long a claim keeps agent ticks, jobs and payouts with the node that took
//! them, and the token every claim is made under (docs/operations.md, "Leases and fencing").
//!
//! A lease is a pair of columns, an owner and an expiry. The owner is a *token minted per
//! claim* — the node's name, then a random part — never just the node's name, and every write a
//! claim's work makes is conditioned on it (`WHERE … owner = $token`). So the token is a
//! fencing token: a node that stalled or was cut off past its lease, and whose work another
//! node took over, finds its token gone when it comes back and writes nothing, even if it has
//! since claimed the same row again under a new token. (Payouts also count their claims in a
//! `fence` column; see `tournaments::payouts::send`.) The node's name comes first so a node
//! shutting down can release everything it holds (`scheduler::release_leases`).

use chrono::Duration;

use crate::crypto::random_base58;

/// How long each kind of claim lasts before another node may take the work over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leases {
    /// A batch of agents claimed for one tick (a live tick renews it before every swap).
    pub ticks: Duration,
    /// A batch of jobs, renewed every [`Leases::job_renewal`] while one of them runs.
    pub jobs: Duration,
    /// One payout being sent, renewed at every step.
    pub payouts: Duration,
}

impl Leases {
    /// What a server runs with: long enough that only a node that stalled or lost the database
    /// loses its work, short enough that another node takes it over soon. Jobs are renewed
    /// while they run, so their lease only bounds how long a dead node's batch waits: a
    /// tournament's start or end, or a prize's sending, is late by at most half a minute when
    /// the node that took it is killed.
    pub const STANDARD: Leases = Leases {
        ticks: Duration::minutes(2),
        jobs: Duration::seconds(30),
        payouts: Duration::seconds(30),
    };

    /// Every kind leased for `millis` (fault testing: `--lease-ms`).
    pub fn uniform(millis: u64) -> Leases {
        let lease = Duration::milliseconds(i64::try_from(millis).unwrap_or(i64::MAX / 2));
        Leases {
            ticks: lease,
            jobs: lease,
            payouts: lease,
        }
    }

    /// How often a running job renews its batch's leases: five times per lease, so a renewal
    /// lost to a slow database round trip or two still leaves the lease standing.
    pub fn job_renewal(&self) -> std::time::Duration {
        (self.jobs / 5)
            .to_std()
            .unwrap_or(std::time::Duration::from_secs(1))
            .max(std::time::Duration::from_millis(100))
    }
}

/// A fresh token for one claim by `node_owner` (`<node>:<worker>`).
pub fn token(node_owner: &str) -> String {
    format!("{node_owner}:{}", random_base58(10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_claim_gets_its_own_token_under_its_node() {
        let (first, second) = (token("node_a:scheduler"), token("node_a:scheduler"));
        assert_ne!(first, second);
        assert!(first.starts_with("node_a:scheduler:"));
    }

    #[test]
    fn job_leases_are_renewed_five_times_per_lease() {
        assert_eq!(
            Leases::STANDARD.job_renewal(),
            std::time::Duration::from_secs(6)
        );
        assert_eq!(
            Leases::uniform(5_000).job_renewal(),
            std::time::Duration::from_secs(1)
        );
        assert_eq!(Leases::uniform(5_000).ticks, Duration::seconds(5));
    }
}
