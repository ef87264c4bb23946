//! The in-process event bus: state changes that streams report are written first (rows), then
//! announced here; SSE handlers subscribe. An event only says *what* changed, so a subscriber
//! that lags or reconnects reads the current state from the database instead of replaying.

use tokio::sync::broadcast;

/// Something a stream may want to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// New snapshot or registrations: the tournament's leaderboard changed.
    LeaderboardChanged { tournament_id: String },
    /// The tournament's window closed; final standings are frozen.
    TournamentEnded { tournament_id: String },
    /// A dungeon run's events up to `seq` are stored (`dungeon_run_events`); watchers read them.
    DungeonRunEvent { run_id: String, seq: i64 },
}

/// Fan-out of [`Event`]s to every subscriber of this process.
#[derive(Debug, Clone)]
pub struct Bus {
    sender: broadcast::Sender<Event>,
}

impl Default for Bus {
    fn default() -> Self {
        Self::new()
    }
}

impl Bus {
    pub fn new() -> Self {
        let (sender, _) = broadcast::channel(1024);
        Bus { sender }
    }

    /// Announce `event`; nobody listening is fine.
    pub fn publish(&self, event: Event) {
        let _ = self.sender.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
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
