//! Events across nodes on PostgreSQL: each node `NOTIFY`s what it publishes and `LISTEN`s for
//! what the others publish, on one channel per database schema.
//!
//! Nothing depends on a notification arriving: streams read their state from the tables, and an
//! event only says which state to re-read. So the relay is allowed to be lossy in one way only,
//! and makes up for it: when its listening connection drops, events sent before it is back are
//! lost, and once it is back it announces [`Event::Resync`] here, on which every stream re-reads.

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::notify;
use super::{Bus, Event};
use crate::db::Store;

/// Events sent in one `NOTIFY` at most: a burst (a snapshot round moving many boards) travels
/// in few notifications, and a payload stays far below PostgreSQL's 8,000-byte limit.
const BATCH: usize = 32;

/// What travels in one notification.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    /// The sending node, so it can ignore its own notifications (it announced them already).
    node: String,
    events: Vec<Event>,
}

/// This node's end of the relay; dropping it stops relaying.
#[derive(Debug)]
pub(crate) struct Relay {
    peer: notify::Peer,
}

impl Relay {
    /// Start relaying `bus` through the database at `database_url` as `node`. The first
    /// `LISTEN` happens before this returns, so a node that cannot listen does not start.
    pub(crate) async fn start(
        bus: &Bus,
        store: &Store,
        database_url: &str,
        node: &str,
    ) -> sqlx::Result<Relay> {
        let (outbox, pending) = mpsc::unbounded_channel();
        if !bus.relay_to(outbox) {
            tracing::warn!("the event bus is relayed already; not relaying it twice");
        }
        let (me, heard, resync) = (own_prefix(node), bus.clone(), bus.clone());
        let sender_node = node.to_owned();
        let peer = notify::Peer::start(
            store,
            database_url,
            "events",
            move |store, channel| send_loop(store, channel, sender_node, pending),
            move |payload| announce(&heard, &me, payload),
            // Events sent while the connection was down are lost: every stream re-reads.
            move || resync.publish_here(Event::Resync),
        )
        .await?;
        Ok(Relay { peer })
    }

    pub(crate) fn stop(&self) {
        self.peer.stop();
    }
}

/// Tell the running nodes about `events` from a process that does not relay (a host's CLI
/// tool writing to the servers' database), so their caches and streams follow at once. On
/// SQLite there is nobody to tell: a running server's cached answers catch up within their
/// maximum age (docs/architecture.md, "Read caches").
pub async fn tell_running_nodes(store: &Store, events: Vec<Event>) {
    if store.backend() != crate::db::Backend::Postgres || events.is_empty() {
        return;
    }
    let channel = match notify::channel(store, "events").await {
        Ok(channel) => channel,
        Err(error) => {
            tracing::warn!(%error, "the running nodes were not told of the change");
            return;
        }
    };
    let envelope = Envelope {
        node: "tool".to_owned(),
        events,
    };
    if let Ok(payload) = serde_json::to_string(&envelope) {
        notify::send(store, &channel, &payload).await;
    }
}

/// `NOTIFY` what this node publishes, in batches of what is waiting.
async fn send_loop(
    store: Store,
    channel: String,
    node: String,
    mut pending: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(first) = pending.recv().await {
        let mut events = vec![first];
        while events.len() < BATCH {
            match pending.try_recv() {
                Ok(event) if !events.contains(&event) => events.push(event),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let payload = match serde_json::to_string(&Envelope {
            node: node.clone(),
            events,
        }) {
            Ok(payload) => payload,
            Err(error) => {
                tracing::error!(%error, "cannot encode events for the other nodes");
                continue;
            }
        };
        notify::send(&store, &channel, &payload).await;
    }
}

/// How this node's own envelopes begin (PostgreSQL hands a node back what it sent, too).
fn own_prefix(node: &str) -> String {
    format!("{{\"node\":{},", serde_json::Value::String(node.to_owned()))
}

/// Announce here what another node published. This node's own envelopes (its events were
/// announced here already), one for every 32 of its events, are passed by on their first bytes
/// (`own`, [`own_prefix`]) rather than parsed.
fn announce(bus: &Bus, own: &str, payload: &str) {
    if payload.starts_with(own) {
        return;
    }
    match serde_json::from_str::<Envelope>(payload) {
        Ok(envelope) => {
            for event in envelope.events {
                bus.publish_here(event);
            }
        }
        Err(error) => tracing::warn!(%error, "an event notification that is not ours"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_carries_events_in_a_stable_shape() {
        let envelope = Envelope {
            node: "node_a".into(),
            events: vec![
                Event::LeaderboardChanged {
                    tournament_id: "trn_1".into(),
                },
                Event::DungeonRunEvent {
                    run_id: "run_1".into(),
                    seq: 7,
                },
            ],
        };
        let text = serde_json::to_string(&envelope).expect("encode");
        assert_eq!(
            text,
            r#"{"node":"node_a","events":[{"kind":"leaderboardChanged","tournamentId":"trn_1"},{"kind":"dungeonRunEvent","runId":"run_1","seq":7}]}"#
        );
        let back: Envelope = serde_json::from_str(&text).expect("decode");
        assert_eq!(back.events, envelope.events);
        // A node knows its own envelopes by their first bytes, and only its own.
        assert!(text.starts_with(&own_prefix("node_a")));
        assert!(!text.starts_with(&own_prefix("node_")));
        assert!(!text.starts_with(&own_prefix("node_ab")));
    }
}
