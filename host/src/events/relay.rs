//! Events across nodes on PostgreSQL: each node `NOTIFY`s what it publishes and `LISTEN`s for
//! what the others publish, on one channel per database schema.
//!
//! Nothing depends on a notification arriving: streams read their state from the tables, and an
//! event only says which state to re-read. So the relay is allowed to be lossy in one way only,
//! and makes up for it: when its listening connection drops, events sent before it is back are
//! lost, and once it is back it announces [`Event::Resync`] here, on which every stream re-reads.

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::notify;
use super::{Bus, Event};
use crate::db::Store;

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
    for payload in pack(&own_prefix("tool"), &events) {
        notify::send(store, &channel, &payload).await;
    }
}

/// `events` packed into as few payloads as fit ([`Packing`]), in order.
fn pack(prefix: &str, events: &[Event]) -> Vec<String> {
    let mut payloads = Vec::new();
    let mut packing = Packing::new(prefix);
    for event in events {
        if !packing.add(event) {
            payloads.extend(packing.finish());
            packing = Packing::new(prefix);
            packing.add(event);
        }
    }
    payloads.extend(packing.finish());
    payloads
}

/// The shortest time between two rounds of notifications from one node. An event after a
/// quiet spell goes at once; under load the events of this long share their notifications.
///
/// Without it a node sent a round for every group-commit batch of dungeon turns (a batch's
/// events arrive together), each notification carrying a few dozen events: about 270 a second
/// at 16,000 turns a second against about 200 with it, each a transaction of PostgreSQL's that
/// wakes every listening session and every node, this one included (docs/architecture.md,
/// "Several nodes"). Watchers on other nodes hear of a change this much later at most, far
/// inside the second they are promised.
const NOTIFY_EVERY: Duration = Duration::from_millis(10);

/// `NOTIFY` what this node publishes, a [`Rounds`] at a time.
async fn send_loop(
    store: Store,
    channel: String,
    node: String,
    pending: mpsc::UnboundedReceiver<Event>,
) {
    let mut rounds = Rounds::new(pending, own_prefix(&node), NOTIFY_EVERY);
    while let Some(payloads) = rounds.next().await {
        for payload in payloads {
            notify::send(&store, &channel, &payload).await;
        }
    }
}

/// The events a node publishes, as rounds of notifications' payloads: what is waiting, packed
/// into as few payloads as PostgreSQL's limit allows ([`pack`]), at most one round every
/// [`NOTIFY_EVERY`].
struct Rounds {
    pending: mpsc::UnboundedReceiver<Event>,
    prefix: String,
    /// The shortest time between two rounds ([`NOTIFY_EVERY`]).
    every: Duration,
    last_round: Option<Instant>,
    /// A round's events while they are packed, kept for the next round.
    events: Vec<Event>,
}

impl Rounds {
    fn new(pending: mpsc::UnboundedReceiver<Event>, prefix: String, every: Duration) -> Self {
        Rounds {
            pending,
            prefix,
            every,
            last_round: None,
            events: Vec::new(),
        }
    }

    /// The next round's payloads; `None` once nothing can be published any more.
    async fn next(&mut self) -> Option<Vec<String>> {
        let first = self.pending.recv().await?;
        if let Some(last) = self.last_round {
            // Already past after a quiet spell: then this does not wait.
            tokio::time::sleep_until(last + self.every).await;
        }
        self.last_round = Some(Instant::now());
        self.events.push(first);
        while let Ok(event) = self.pending.try_recv() {
            self.events.push(event);
        }
        let payloads = pack(&self.prefix, &self.events);
        self.events.clear();
        Some(payloads)
    }
}

/// One notification's payload as it is filled: an [`Envelope`]'s JSON, written an event at a
/// time so it stops short of [`notify::MAX_PAYLOAD`].
///
/// Each notification is a transaction of its own on PostgreSQL and wakes every listening
/// node, so the fewer the better. A count of events would have to assume the longest event; by
/// bytes, a notification carries about a hundred dungeon turns' events, three times the 32 it
/// was held to before (docs/benchmarks.md, session 47).
struct Packing {
    payload: String,
    /// The events in the payload, as written: one event twice in a notification says nothing
    /// more (a stream re-reads its state either way).
    written: HashSet<String>,
}

impl Packing {
    /// A payload beginning with this node's own prefix ([`own_prefix`]).
    fn new(prefix: &str) -> Self {
        let mut payload = String::with_capacity(notify::MAX_PAYLOAD);
        payload.push_str(prefix);
        payload.push_str("\"events\":[");
        Packing {
            payload,
            written: HashSet::new(),
        }
    }

    /// Add `event`, or pass it by when it is in already; false when it does not fit (it then
    /// belongs in the next notification). The first event always fits: one event alone over the
    /// limit is left for PostgreSQL to refuse, and logged there.
    fn add(&mut self, event: &Event) -> bool {
        let text = match serde_json::to_string(event) {
            Ok(text) => text,
            Err(error) => {
                tracing::error!(%error, "cannot encode an event for the other nodes");
                return true;
            }
        };
        if self.written.contains(&text) {
            return true;
        }
        let opens = self.written.is_empty();
        // A comma before it unless it opens the list, and the closing `]}` after it.
        let length = self.payload.len() + usize::from(!opens) + text.len() + 2;
        if !opens {
            if length > notify::MAX_PAYLOAD {
                return false;
            }
            self.payload.push(',');
        }
        self.payload.push_str(&text);
        self.written.insert(text);
        true
    }

    /// The finished payload; `None` when no event made it in.
    fn finish(mut self) -> Option<String> {
        if self.written.is_empty() {
            return None;
        }
        self.payload.push_str("]}");
        Some(self.payload)
    }
}

/// How this node's own envelopes begin (PostgreSQL hands a node back what it sent, too).
fn own_prefix(node: &str) -> String {
    format!("{{\"node\":{},", serde_json::Value::String(node.to_owned()))
}

/// Announce here what another node published. This node's own envelopes (its events were
/// announced here already) are passed by on their first bytes (`own`, [`own_prefix`]) rather
/// than parsed.
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
        // Packed for a notification, the same bytes.
        assert_eq!(
            pack(&own_prefix("node_a"), &envelope.events),
            vec![text.clone()]
        );
        let back: Envelope = serde_json::from_str(&text).expect("decode");
        assert_eq!(back.events, envelope.events);
        // A node knows its own envelopes by their first bytes, and only its own.
        assert!(text.starts_with(&own_prefix("node_a")));
        assert!(!text.starts_with(&own_prefix("node_")));
        assert!(!text.starts_with(&own_prefix("node_ab")));
    }

    fn turn(n: i64) -> Event {
        Event::DungeonRunEvent {
            run_id: format!("run_{n:026}"),
            seq: n,
        }
    }

    #[test]
    fn a_packed_notification_is_an_envelope_below_the_limit_and_loses_no_event() {
        let events: Vec<Event> = (0..1_000).map(turn).collect();
        let payloads = pack(&own_prefix("node_a"), &events);
        let mut heard = Vec::new();
        for payload in &payloads {
            assert!(payload.len() <= notify::MAX_PAYLOAD, "{}", payload.len());
            assert!(payload.starts_with(&own_prefix("node_a")));
            let envelope: Envelope = serde_json::from_str(payload).expect("an envelope");
            assert_eq!(envelope.node, "node_a");
            heard.extend(envelope.events);
        }
        assert_eq!(heard, events, "every event, once, in order");
        // Full notifications, not one per 32 events: ~70 bytes an event here.
        assert!(payloads.len() <= 10, "{} notifications", payloads.len());
        assert!(payloads[0].len() > notify::MAX_PAYLOAD - 100);
    }

    /// The events of a round's payloads, in order.
    fn events_of(payloads: Option<Vec<String>>) -> Vec<Event> {
        let mut events = Vec::new();
        for payload in payloads.expect("a round") {
            let envelope: Envelope = serde_json::from_str(&payload).expect("an envelope");
            events.extend(envelope.events);
        }
        events
    }

    #[tokio::test]
    async fn a_lone_event_goes_at_once_and_a_burst_shares_a_round() {
        let every = Duration::from_millis(500);
        let (outbox, pending) = mpsc::unbounded_channel();
        let mut rounds = Rounds::new(pending, own_prefix("node_a"), every);
        // A quiet node's first event waits for nothing.
        let started = Instant::now();
        outbox.send(turn(1)).expect("send");
        assert_eq!(events_of(rounds.next().await), vec![turn(1)]);
        assert!(started.elapsed() < every, "{:?}", started.elapsed());
        // Right after it, a burst: one round once the interval is over, with what came meanwhile.
        outbox.send(turn(2)).expect("send");
        let round = tokio::spawn(async move {
            let payloads = rounds.next().await;
            (rounds, payloads)
        });
        tokio::time::sleep(every / 4).await;
        outbox.send(turn(3)).expect("send");
        outbox.send(turn(4)).expect("send");
        let (mut rounds, payloads) = round.await.expect("the round");
        assert!(started.elapsed() >= every, "{:?}", started.elapsed());
        assert_eq!(events_of(payloads), vec![turn(2), turn(3), turn(4)]);
        // Quiet for an interval: the next event goes at once again.
        tokio::time::sleep(every).await;
        let quiet = Instant::now();
        outbox.send(turn(5)).expect("send");
        assert_eq!(events_of(rounds.next().await), vec![turn(5)]);
        assert!(quiet.elapsed() < every, "{:?}", quiet.elapsed());
        drop(outbox);
        assert_eq!(
            rounds.next().await,
            None,
            "nothing more once the bus is gone"
        );
    }

    #[test]
    fn an_event_twice_in_one_notification_is_sent_once() {
        let events = [
            turn(1),
            turn(2),
            turn(1),
            Event::TournamentsChanged,
            turn(2),
        ];
        let payloads = pack(&own_prefix("node_a"), &events);
        assert_eq!(payloads.len(), 1);
        let envelope: Envelope = serde_json::from_str(&payloads[0]).expect("an envelope");
        assert_eq!(
            envelope.events,
            vec![turn(1), turn(2), Event::TournamentsChanged]
        );
    }

    #[test]
    fn an_event_over_the_limit_goes_alone_and_nothing_is_sent_for_no_event() {
        let long = Event::AccountChanged {
            account_id: "a".repeat(notify::MAX_PAYLOAD),
        };
        let payloads = pack(&own_prefix("node_a"), &[turn(1), long.clone(), turn(2)]);
        assert_eq!(payloads.len(), 3, "the long one between the others, alone");
        let middle: Envelope = serde_json::from_str(&payloads[1]).expect("an envelope");
        assert_eq!(middle.events, vec![long]);
        assert_eq!(Packing::new(&own_prefix("node_a")).finish(), None);
    }
}
