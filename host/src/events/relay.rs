//! Events across nodes on PostgreSQL: each node `NOTIFY`s what it publishes and `LISTEN`s for
//! what the others publish, on one channel per database schema.
//!
//! Nothing depends on a notification arriving: streams read their state from the tables, and an
//! event only says which state to re-read. So the relay is allowed to be lossy in one way only,
//! and makes up for it: when its listening connection drops, events sent before it is back are
//! lost, and once it is back it announces [`Event::Resync`] here, on which every stream re-reads.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sqlx::postgres::PgListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Bus, Event};
use crate::crypto::sha256_hex;
use crate::db::Store;

/// Events sent in one `NOTIFY` at most: a burst (a snapshot round moving many boards) travels
/// in few notifications, and a payload stays far below PostgreSQL's 8,000-byte limit.
const BATCH: usize = 32;
/// How long the listener waits before connecting again after losing its connection.
const RECONNECT_AFTER: Duration = Duration::from_millis(500);
/// Tries per `NOTIFY` before the batch is given up (logged; the next event or a stream's own
/// timer catches the other nodes up).
const NOTIFY_ATTEMPTS: u32 = 3;

/// What travels in one notification.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    /// The sending node, so it can ignore its own notifications (it announced them already).
    node: String,
    events: Vec<Event>,
}

/// The channel of the schema `store` works in. Deployments (and tests) that share one database
/// in different schemas must not hear each other; a schema name can be anything, and a
/// channel name is an identifier of at most 63 bytes, so it is hashed.
pub async fn channel(store: &Store) -> sqlx::Result<String> {
    let (schema,): (String,) = sqlx::query_as("SELECT current_schema()::text")
        .fetch_one(store.read())
        .await?;
    Ok(channel_for(&schema))
}

fn channel_for(schema: &str) -> String {
    format!("crucible_events_{}", &sha256_hex(schema)[..16])
}

/// The relay's two tasks; aborting them stops it.
#[derive(Debug)]
pub struct Relay {
    tasks: [JoinHandle<()>; 2],
}

impl Relay {
    /// Start relaying `bus` through the database at `database_url` as `node`. The first
    /// `LISTEN` happens before this returns, so a node that cannot listen does not start.
    pub async fn start(
        bus: &Bus,
        store: &Store,
        database_url: &str,
        node: &str,
    ) -> sqlx::Result<Relay> {
        let channel = channel(store).await?;
        let listener = listen(database_url, &channel).await?;
        let (outbox, pending) = mpsc::unbounded_channel();
        if !bus.relay_to(outbox) {
            tracing::warn!("the event bus is relayed already; not relaying it twice");
        }
        let sender = tokio::spawn(send_loop(
            store.clone(),
            channel.clone(),
            node.to_owned(),
            pending,
        ));
        let receiver = tokio::spawn(listen_loop(
            listener,
            database_url.to_owned(),
            channel,
            node.to_owned(),
            bus.clone(),
        ));
        Ok(Relay {
            tasks: [sender, receiver],
        })
    }

    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for Relay {
    /// A node built and never served, or stopped, relays nothing further.
    fn drop(&mut self) {
        self.stop();
    }
}

async fn listen(database_url: &str, channel: &str) -> sqlx::Result<PgListener> {
    let mut listener = PgListener::connect(database_url).await?;
    listener.listen(channel).await?;
    Ok(listener)
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
        for attempt in 1..=NOTIFY_ATTEMPTS {
            let sent = sqlx::query("SELECT pg_notify($1, $2)")
                .bind(&channel)
                .bind(&payload)
                .execute(store.write())
                .await;
            match sent {
                Ok(_) => break,
                Err(error) if attempt == NOTIFY_ATTEMPTS => {
                    tracing::warn!(%error, "events not relayed to the other nodes");
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await,
            }
        }
    }
}

/// Announce here what the other nodes publish; after a lost connection, listen again and
/// announce [`Event::Resync`] for whatever was missed meanwhile.
async fn listen_loop(
    mut listener: PgListener,
    database_url: String,
    channel: String,
    node: String,
    bus: Bus,
) {
    loop {
        match listener.try_recv().await {
            Ok(Some(notification)) => {
                match serde_json::from_str::<Envelope>(notification.payload()) {
                    Ok(envelope) if envelope.node != node => {
                        for event in envelope.events {
                            bus.publish_here(event);
                        }
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "an event notification that is not ours"),
                }
            }
            // The connection dropped (`None`), or reading failed: start over on a new one
            // rather than let the listener reconnect silently, so the gap is known.
            Ok(None) | Err(_) => {
                tracing::warn!("lost the event notification connection; reconnecting");
                listener = loop {
                    tokio::time::sleep(RECONNECT_AFTER).await;
                    match listen(&database_url, &channel).await {
                        Ok(listener) => break listener,
                        Err(error) => {
                            tracing::warn!(%error, "cannot listen for events yet");
                        }
                    }
                };
                tracing::info!("listening for events again; streams re-read their state");
                bus.publish_here(Event::Resync);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_identifiers_and_differ_per_schema() {
        let public = channel_for("public");
        assert!(public.len() <= 63);
        assert!(
            public
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        );
        assert_ne!(public, channel_for("t_other"));
        assert_eq!(public, channel_for("public"));
    }

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
    }
}
