//! A tournament's live board, rendered once for all who watch it.
//!
//! Every `GET /api/tournaments/{id}/live` stream of one tournament sends the same frames, so one
//! feed per watched tournament renders them: it reads the board when the tournament's topic
//! wakes it (a snapshot, a registration, the end), and every [`PUSH_EVERY`], serialises it once
//! into a complete `leaderboard:update` frame, and hands that frame to its watchers through a
//! `watch` channel. A watcher holds a receiver and writes the shared bytes to its socket; it
//! renders nothing and reads nothing, so a board watched by 100,000 clients costs one read and
//! one serialisation per change, and each watcher a few words besides its connection.
//!
//! A watcher that falls behind skips to the newest board (the feed keeps only that), which is
//! what a client of a live board wants; the feed ends when its last watcher leaves, or after the
//! tournament ended and `tournament:ended` was handed out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::{Instant, MissedTickBehavior, interval_at};

use super::leaderboard::{self, Cache as LeaderboardCache};
use super::model::{Status, Tournament};
use super::queries;
use crate::clock::Clock;
use crate::db::Store;
use crate::events::{Bus, Topic};
use crate::http::streams::sse_frame;

/// What a feed reads and hears: the tournament and its board, and the bus its topic is on.
#[derive(Clone)]
pub(crate) struct BoardReads {
    pub store: Store,
    pub clock: Arc<dyn Clock>,
    pub leaderboards: Arc<LeaderboardCache>,
    pub events: Bus,
}

/// How often the board is pushed even when nothing changed.
pub(super) const PUSH_EVERY: Duration = Duration::from_secs(30);
/// How often a keep-alive comment is sent, so proxies do not close a quiet stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Entries per pushed board.
const STREAM_PAGE: usize = 100;

/// What a feed hands its watchers: the newest frames, shared.
#[derive(Debug, Clone, Default)]
pub(crate) struct Frame {
    /// The board as a whole `leaderboard:update` frame; empty until the first read.
    pub board: Bytes,
    /// Bumped with every board pushed (a change, or the periodic push).
    pub board_version: u64,
    /// Bumped at each keep-alive.
    pub pings: u64,
    /// `tournament:ended` with the final standings, once the window has closed: the last frame.
    pub ended: Option<Bytes>,
    /// The tournament can no longer be read: the streams end.
    pub gone: bool,
}

/// The feeds of the tournaments watched on this node.
#[derive(Debug, Default)]
pub struct BoardFeeds {
    feeds: Mutex<HashMap<String, Arc<watch::Sender<Frame>>>>,
}

impl BoardFeeds {
    /// Watch `tournament_id`'s board, starting its feed if nobody watched it yet.
    pub(crate) fn watch(
        self: &Arc<Self>,
        reads: &BoardReads,
        tournament_id: &str,
    ) -> watch::Receiver<Frame> {
        let mut feeds = self.feeds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(feed) = feeds.get(tournament_id) {
            return feed.subscribe();
        }
        let feed = Arc::new(watch::Sender::new(Frame::default()));
        let receiver = feed.subscribe();
        feeds.insert(tournament_id.to_owned(), feed.clone());
        tokio::spawn(run(
            self.clone(),
            reads.clone(),
            tournament_id.to_owned(),
            feed,
        ));
        receiver
    }

    /// Tournaments with a feed running on this node.
    pub fn watched(&self) -> usize {
        self.feeds.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Forget `feed` if nobody watches it (or `anyway`): true when it was forgotten. Checked
    /// under the lock a new watcher takes, so no watcher joins a feed that is ending.
    fn retire(&self, tournament_id: &str, feed: &Arc<watch::Sender<Frame>>, anyway: bool) -> bool {
        let mut feeds = self.feeds.lock().unwrap_or_else(|p| p.into_inner());
        if !anyway && feed.receiver_count() > 0 {
            return false;
        }
        if feeds
            .get(tournament_id)
            .is_some_and(|held| Arc::ptr_eq(held, feed))
        {
            feeds.remove(tournament_id);
        }
        true
    }
}

/// One feed: read and render on every wake-up and push, until nobody watches or the tournament
/// ended.
async fn run(
    feeds: Arc<BoardFeeds>,
    reads: BoardReads,
    tournament_id: String,
    feed: Arc<watch::Sender<Frame>>,
) {
    // Watching before the first read, so a change in between is not missed.
    let mut wakes = reads.events.watch(Topic::Board(tournament_id.clone()));
    let mut push = interval_at(Instant::now() + PUSH_EVERY, PUSH_EVERY);
    push.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut ping = interval_at(Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    ping.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let (mut first, mut stale) = (true, true);
    loop {
        if stale {
            render(&reads, &tournament_id, &feed, first).await;
            (first, stale) = (false, false);
        }
        if feed.borrow().ended.is_some() || feed.borrow().gone {
            // Watchers keep the last frames after the feed is gone; a newcomer starts a new
            // feed, which hands it the same.
            feeds.retire(&tournament_id, &feed, true);
            return;
        }
        tokio::select! {
            () = feed.closed() => {
                if feeds.retire(&tournament_id, &feed, false) {
                    return;
                }
            }
            woke = wakes.changed() => {
                if woke.is_err() {
                    return;
                }
                stale = true;
            }
            _ = push.tick() => render(&reads, &tournament_id, &feed, false).await,
            _ = ping.tick() => feed.send_modify(|frame| frame.pings += 1),
        }
    }
}

/// Read the tournament and its board and hand the frames out. A tournament that ended is
/// announced with its final standings; its board is pushed too when this is the feed's first
/// read (a watcher arriving after the end gets both, as it always did).
async fn render(reads: &BoardReads, tournament_id: &str, feed: &watch::Sender<Frame>, first: bool) {
    let tournament = match queries::get(&reads.store, tournament_id).await {
        Ok(Some(tournament)) => tournament,
        Ok(None) => {
            feed.send_modify(|frame| frame.gone = true);
            return;
        }
        Err(error) => {
            tracing::warn!(%error, tournament_id, "live board cannot read the tournament");
            return;
        }
    };
    let view = match first_page(reads, &tournament).await {
        Ok(view) => view,
        Err(error) => {
            tracing::warn!(%error, tournament_id, "live board cannot read the leaderboard");
            return;
        }
    };
    let ended = matches!(
        Status::parse(&tournament.status),
        Status::Ended | Status::Cancelled
    );
    let board = if first || !ended {
        let id = tournament.last_snapshot_at.map(|at| at.to_string());
        Some(sse_frame("leaderboard:update", id.as_deref(), &view))
    } else {
        None
    };
    let ended = if ended {
        let payload = serde_json::json!({
            "tournamentId": tournament.id,
            "status": tournament.status_at(reads.clock.now()),
            "endDate": crate::clock::rfc3339(crate::clock::from_millis(tournament.end_date)),
            "standings": view,
        });
        Some(sse_frame("tournament:ended", None, &payload))
    } else {
        None
    };
    let (board, ended) = match (board.transpose(), ended.transpose()) {
        (Ok(board), Ok(ended)) => (board, ended),
        (Err(error), _) | (_, Err(error)) => {
            tracing::error!(%error, tournament_id, "live board cannot be serialised");
            return;
        }
    };
    feed.send_modify(|frame| {
        if let Some(board) = board {
            frame.board = board;
            frame.board_version += 1;
        }
        if ended.is_some() {
            frame.ended = ended;
        }
    });
}

/// The board's first page as the stream sends it.
async fn first_page(
    reads: &BoardReads,
    tournament: &Tournament,
) -> sqlx::Result<leaderboard::LeaderboardView> {
    leaderboard::view(
        &reads.store,
        &*reads.clock,
        &reads.leaderboards,
        tournament,
        0,
        STREAM_PAGE,
    )
    .await
}
