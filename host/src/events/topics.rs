//! Wake-ups by topic, for streams held open by many clients.
//!
//! The bus is a broadcast: every subscriber hears every event. That suits a handful of
//! subscribers; a node holding 100,000 open streams would wake all of them for each dungeon turn
//! of anyone. So streams do not subscribe to the bus: they watch their topic (one tournament's
//! board, one dungeon run), and the bus wakes a topic's watchers only for events that name it
//! ([`Topics::route`], called as each event is announced). A wake-up says "read again", never
//! what changed, like the bus itself: a watcher woken twice before it looked reads once.
//!
//! A topic costs its watchers a `watch` receiver each (a pointer and a version); the topic
//! itself lives while anyone watches it and is swept once nobody does.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::watch;

use super::Event;

/// What a stream can watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Topic {
    /// A tournament's board: it changed, or the tournament ended.
    Board(String),
    /// A dungeon run: it stored more events.
    Run(String),
}

impl Topic {
    /// The map this topic's kind lives in, and its key.
    fn split(&self) -> (Kind, &str) {
        match self {
            Topic::Board(id) => (Kind::Board, id),
            Topic::Run(id) => (Kind::Run, id),
        }
    }

    /// The topic `event` is about, if any, borrowed from the event: routing allocates nothing.
    fn of(event: &Event) -> Option<(Kind, &str)> {
        match event {
            Event::LeaderboardChanged { tournament_id }
            | Event::TournamentEnded { tournament_id } => Some((Kind::Board, tournament_id)),
            Event::DungeonRunEvent { run_id, .. } => Some((Kind::Run, run_id)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Board,
    Run,
}

/// The watched topics of this node.
#[derive(Debug, Default)]
pub(crate) struct Topics {
    watched: Mutex<Watched>,
}

#[derive(Debug, Default)]
struct Watched {
    /// Each board's wake-up counter, by tournament id.
    boards: HashMap<String, watch::Sender<u64>>,
    /// Each run's, by run id.
    runs: HashMap<String, watch::Sender<u64>>,
    /// How many topics there were after the last sweep: the next sweep runs once there are
    /// twice as many, so sweeping costs a constant per topic created.
    swept_at: usize,
}

impl Watched {
    fn of_kind(&mut self, kind: Kind) -> &mut HashMap<String, watch::Sender<u64>> {
        match kind {
            Kind::Board => &mut self.boards,
            Kind::Run => &mut self.runs,
        }
    }

    fn len(&self) -> usize {
        self.boards.len() + self.runs.len()
    }

    /// Forget the topics nobody watches.
    fn sweep(&mut self) {
        self.boards.retain(|_, sender| sender.receiver_count() > 0);
        self.runs.retain(|_, sender| sender.receiver_count() > 0);
        self.swept_at = self.len();
    }
}

impl Topics {
    /// Watch `topic`: the receiver changes whenever an event names it (or the node may have
    /// missed events, [`Event::Resync`]).
    pub(crate) fn watch(&self, topic: Topic) -> watch::Receiver<u64> {
        let mut watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        if watched.len() >= 2 * watched.swept_at.max(64) {
            watched.sweep();
        }
        let (kind, id) = topic.split();
        let topics = watched.of_kind(kind);
        match topics.get(id) {
            Some(sender) => sender.subscribe(),
            None => {
                let sender = watch::Sender::new(0);
                let receiver = sender.subscribe();
                topics.insert(id.to_owned(), sender);
                receiver
            }
        }
    }

    /// Wake the watchers of the topic `event` names; every watcher on [`Event::Resync`].
    pub(crate) fn route(&self, event: &Event) {
        let mut watched = self.watched.lock().unwrap_or_else(|p| p.into_inner());
        if *event == Event::Resync {
            watched.sweep();
            for sender in watched.boards.values().chain(watched.runs.values()) {
                sender.send_modify(|wakes| *wakes += 1);
            }
            return;
        }
        let Some((kind, id)) = Topic::of(event) else {
            return;
        };
        let topics = watched.of_kind(kind);
        if let Some(sender) = topics.get(id) {
            if sender.receiver_count() == 0 {
                topics.remove(id);
            } else {
                sender.send_modify(|wakes| *wakes += 1);
            }
        }
    }

    /// Topics held now (watched, or not yet swept).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.watched.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board_changed(id: &str) -> Event {
        Event::LeaderboardChanged {
            tournament_id: id.into(),
        }
    }

    #[test]
    fn only_the_watchers_of_the_named_topic_wake() {
        let topics = Topics::default();
        let mut a = topics.watch(Topic::Board("a".into()));
        let b = topics.watch(Topic::Board("b".into()));
        let run = topics.watch(Topic::Run("a".into()));
        topics.route(&board_changed("a"));
        assert!(a.has_changed().expect("open"));
        assert!(!b.has_changed().expect("open"));
        assert!(!run.has_changed().expect("open"));
        a.mark_unchanged();
        topics.route(&Event::DungeonRunEvent {
            run_id: "a".into(),
            seq: 3,
        });
        topics.route(&Event::TournamentsChanged);
        assert!(run.has_changed().expect("open"));
        assert!(!a.has_changed().expect("open"));
        topics.route(&Event::TournamentEnded {
            tournament_id: "b".into(),
        });
        assert!(b.has_changed().expect("open"));
    }

    #[test]
    fn a_resync_wakes_every_watcher() {
        let topics = Topics::default();
        let a = topics.watch(Topic::Board("a".into()));
        let run = topics.watch(Topic::Run("r".into()));
        topics.route(&Event::Resync);
        assert!(a.has_changed().expect("open"));
        assert!(run.has_changed().expect("open"));
    }

    #[test]
    fn topics_nobody_watches_are_swept() {
        let topics = Topics::default();
        for n in 0..1_000 {
            drop(topics.watch(Topic::Run(format!("run{n}"))));
        }
        assert!(topics.len() < 200, "swept as they grew: {}", topics.len());
        let _kept = topics.watch(Topic::Board("kept".into()));
        topics.route(&Event::Resync);
        assert_eq!(topics.len(), 1);
        // An event for a topic nobody watches any more forgets it.
        let dropped = topics.watch(Topic::Board("gone".into()));
        drop(dropped);
        topics.route(&board_changed("gone"));
        assert_eq!(topics.len(), 1);
    }
}
