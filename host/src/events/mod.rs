//! The event bus: state changes that streams report are written first (rows), then
//! announced here; SSE handlers subscribe. An event only says *what* changed, so a subscriber
//! that lags or reconnects reads the current state from the database instead of replaying.
//!
//! On SQLite (one node) the bus is in-process. On PostgreSQL every node relays what it publishes
//! to the others through `LISTEN/NOTIFY` ([`relay`]), so a registration taken by one node moves
//! the live boards streamed by all of them (docs/architecture.md, "Several nodes").

pub mod notify;
pub mod relay;
mod topics;

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc, watch};

pub(crate) use topics::Topic;

/// Something a stream may want to push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// New snapshot or registrations: the tournament's leaderboard changed.
    LeaderboardChanged { tournament_id: String },
    /// The tournament's window closed; final standings are frozen.
    TournamentEnded { tournament_id: String },
    /// A dungeon run's events up to `seq` are stored (`dungeon_run_events`); watchers read them.
    DungeonRunEvent { run_id: String, seq: i64 },
    /// A tournament was created or changed status (started, cancelled): lists and details move.
    TournamentsChanged,
    /// An account's profile or wallets changed.
    AccountChanged { account_id: String },
    /// An account's keys were revoked, or the account was suspended, reinstated or deleted:
    /// every node must stop accepting what it no longer should.
    KeysChanged { account_id: String },
    /// This node may have missed events of other nodes (its notification connection dropped
    /// and came back): every stream re-reads its state. Never relayed.
    Resync,
}

/// Fan-out of [`Event`]s to every subscriber of this process, and through the relay (once
/// started) to every other node.
#[derive(Clone)]
pub struct Bus {
    sender: broadcast::Sender<Event>,
    relay: Arc<OnceLock<mpsc::UnboundedSender<Event>>>,
    /// Runs synchronously for every event announced here, before any subscriber hears it: the
    /// read caches forget what changed before this node can answer from them again.
    hook: Arc<OnceLock<EventHook>>,
    /// What open streams watch instead of subscribing ([`Bus::watch`]).
    topics: Arc<topics::Topics>,
}

/// What [`Bus::on_every_event`] runs.
pub(crate) type EventHook = Box<dyn Fn(&Event) + Send + Sync>;

impl std::fmt::Debug for Bus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bus")
            .field("subscribers", &self.sender.receiver_count())
            .field("relayed", &self.relay.get().is_some())
            .finish()
    }
}

impl Default for Bus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus {
    pub(crate) fn new() -> Self {
        let (sender, _) = broadcast::channel(1024);
        Bus {
            sender,
            relay: Arc::default(),
            hook: Arc::default(),
            topics: Arc::default(),
        }
    }

    /// Announce `event` here and, if relayed, to the other nodes; nobody listening is fine.
    pub fn publish(&self, event: Event) {
        if let Some(relay) = self.relay.get()
            && event != Event::Resync
        {
            // The relay ends only with the node; an event published while it stops is moot.
            let _ = relay.send(event.clone());
        }
        self.publish_here(event);
    }

    /// Announce `event` to this process only (what the relay hears from other nodes).
    pub(crate) fn publish_here(&self, event: Event) {
        if let Some(hook) = self.hook.get() {
            hook(&event);
        }
        self.topics.route(&event);
        let _ = self.sender.send(event);
    }

    /// Watch one topic: the receiver changes whenever an event about it is announced on this
    /// node (published here or relayed from another), and on [`Event::Resync`]. What streams
    /// held by many clients use instead of [`Bus::subscribe`], which wakes on every event.
    pub(crate) fn watch(&self, topic: Topic) -> watch::Receiver<u64> {
        self.topics.watch(topic)
    }

    /// Run `hook` for every event announced on this node, published here or relayed from
    /// another; the first call wins.
    pub(crate) fn on_every_event(&self, hook: EventHook) -> bool {
        self.hook.set(hook).is_ok()
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
    }

    /// Route published events to `outbox` as well; the first call wins.
    pub(crate) fn relay_to(&self, outbox: mpsc::UnboundedSender<Event>) -> bool {
        self.relay.set(outbox).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn subscribers_receive_what_is_published_after_they_subscribe() {
        let bus = Bus::new();
        bus.publish(Event::LeaderboardChanged {
            tournament_id: "early".into(),
        });
        let mut receiver = bus.subscribe();
        bus.publish(Event::TournamentEnded {
            tournament_id: "t".into(),
        });
        assert_eq!(
            receiver.recv().await.ok(),
            Some(Event::TournamentEnded {
                tournament_id: "t".into()
            })
        );
    }
}
