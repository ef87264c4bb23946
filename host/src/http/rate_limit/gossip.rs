//! Gossiped limits: every node counts what it admits in memory and, every [`FLUSH_EVERY`],
//! tells the other nodes through `NOTIFY` how many requests of which keys it admitted; each
//! node counts those reports against the same budget. A read thus costs no database round
//! trip, and the service admits at most the budget plus what the other nodes admitted within
//! one flush interval. A listener that lost its connection misses reports for a moment and
//! undercounts until they leave the window: these limits guard reads, where that is harmless.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::RateLimits;
use crate::clock::{from_millis, to_millis};
use crate::db::Store;
use crate::events::notify;

/// How often a node reports its admissions.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// One admission, on its way to the other nodes.
#[derive(Debug)]
pub(crate) struct Hit {
    pub(super) limiter: &'static str,
    pub(super) key: String,
    pub(super) at: DateTime<Utc>,
}

/// One notification: admissions per limiter and key since the last one.
#[derive(Debug, Serialize, Deserialize)]
struct Report {
    node: String,
    /// `(limiter, key, at in ms, admissions)`; `at` is the latest of them, so a report never
    /// leaves the window before the admissions it stands for.
    hits: Vec<(String, String, i64, u32)>,
}

/// This node's end of the gossip; dropping it stops it.
pub(crate) struct Gossip {
    peer: notify::Peer,
}

impl Gossip {
    /// Share every limit of `limits` with the other nodes of `store` (PostgreSQL): exact
    /// limits check on the database from now on, gossiped ones report and listen here.
    pub(crate) async fn start(
        limits: Arc<RateLimits>,
        store: &Store,
        database_url: &str,
        node: &str,
    ) -> sqlx::Result<Gossip> {
        let (outbox, pending) = mpsc::unbounded_channel();
        let (me, sender_node) = (node.to_owned(), node.to_owned());
        let heard = limits.clone();
        let peer = notify::Peer::start(
            store,
            database_url,
            "limits",
            move |store, channel| send_loop(store, channel, sender_node, pending),
            move |payload| hear(&heard, &me, payload),
            // Reports sent meanwhile are lost; the limits undercount until they would have
            // left the window anyway.
            || {},
        )
        .await?;
        // Only once listening: a node that cannot hear the others keeps its own counts.
        limits.share(store, &outbox);
        Ok(Gossip { peer })
    }

    pub(crate) fn stop(&self) {
        self.peer.stop();
    }
}

async fn send_loop(
    store: Store,
    channel: String,
    node: String,
    mut pending: mpsc::UnboundedReceiver<Hit>,
) {
    while let Some(first) = pending.recv().await {
        // Gather for one interval, so a busy node sends a few notifications a second.
        tokio::time::sleep(FLUSH_EVERY).await;
        let mut counts: HashMap<(&'static str, String), (DateTime<Utc>, u32)> = HashMap::new();
        let mut add = |hit: Hit| {
            let entry = counts.entry((hit.limiter, hit.key)).or_insert((hit.at, 0));
            entry.0 = entry.0.max(hit.at);
            entry.1 = entry.1.saturating_add(1);
        };
        add(first);
        while let Ok(hit) = pending.try_recv() {
            add(hit);
        }
        for payload in payloads(&node, counts) {
            notify::send(&store, &channel, &payload).await;
        }
    }
}

/// The reports for `counts`, each under PostgreSQL's payload limit.
fn payloads(
    node: &str,
    counts: HashMap<(&'static str, String), (DateTime<Utc>, u32)>,
) -> Vec<String> {
    let mut payloads = Vec::new();
    let mut report = Report {
        node: node.to_owned(),
        hits: Vec::new(),
    };
    let mut size = 0;
    for ((limiter, key), (at, n)) in counts {
        // Keys are client addresses and account ids, far below the limit; one that is not
        // would make a report PostgreSQL refuses.
        let entry_size = limiter.len() + key.len() + 40;
        if entry_size > notify::MAX_PAYLOAD / 2 {
            continue;
        }
        if size + entry_size > notify::MAX_PAYLOAD - node.len() - 32 && !report.hits.is_empty() {
            payloads.extend(serde_json::to_string(&report).ok());
            report.hits.clear();
            size = 0;
        }
        size += entry_size;
        report
            .hits
            .push((limiter.to_owned(), key, to_millis(at), n));
    }
    if !report.hits.is_empty() {
        payloads.extend(serde_json::to_string(&report).ok());
    }
    payloads
}

fn hear(limits: &RateLimits, me: &str, payload: &str) {
    let report = match serde_json::from_str::<Report>(payload) {
        Ok(report) if report.node != me => report,
        Ok(_) => return,
        Err(error) => {
            tracing::warn!(%error, "a rate-limit report that is not ours");
            return;
        }
    };
    for (limiter, key, at, n) in report.hits {
        if let Some(limiter) = limits.by_name(&limiter) {
            limiter.heard(&key, from_millis(at), n as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_stay_under_the_payload_limit_and_lose_nothing() {
        let now = from_millis(1_700_000_000_000);
        let counts: HashMap<_, _> = (0..2_000)
            .map(|i| {
                (
                    ("tournament_reads", format!("203.0.{}.{}", i / 256, i % 256)),
                    (now, 2),
                )
            })
            .collect();
        let payloads = payloads("node_a", counts);
        assert!(payloads.len() > 1);
        let mut total = 0;
        for payload in &payloads {
            assert!(payload.len() < 8_000, "{} bytes", payload.len());
            let report: Report = serde_json::from_str(payload).expect("report");
            total += report.hits.iter().map(|hit| hit.3).sum::<u32>();
        }
        assert_eq!(total, 4_000);
    }

    #[test]
    fn a_node_counts_what_others_report_and_ignores_its_own() {
        let clock = Arc::new(crate::clock::ManualClock::new(from_millis(
            1_700_000_000_000,
        )));
        let limits = RateLimits::new(true, clock.clone());
        let report = |node: &str| {
            serde_json::to_string(&Report {
                node: node.into(),
                hits: vec![(
                    "tournament_reads".into(),
                    "1.2.3.4".into(),
                    1_700_000_000_000,
                    120,
                )],
            })
            .expect("report")
        };
        hear(&limits, "node_a", &report("node_a"));
        assert!(limits.tournament_reads.check_now("1.2.3.4").is_ok());
        hear(&limits, "node_a", &report("node_b"));
        assert!(
            limits.tournament_reads.check_now("1.2.3.4").is_err(),
            "node b used the whole budget"
        );
        hear(&limits, "node_a", "not json");
    }
}
