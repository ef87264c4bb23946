//! `GET /api/tournaments/{id}/live`: a server-sent event stream. It sends
//! `leaderboard:update` on connect, every 30 seconds and whenever the board changes, and
//! `tournament:ended` with the final standings when the window closes, then ends the stream.
//! A reconnecting client simply gets the latest board again.
//!
//! The frames come from the tournament's feed ([`super::board_feed`]), rendered once for every
//! watcher of the node; a stream only writes them.

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use tokio::sync::watch;

use super::board_feed::{BoardReads, Frame};
use super::privacy::InviteParams;
use crate::http::ApiError;
use crate::http::json::{Path, Query};
use crate::http::rate_limit::{IpLimit, LivePolicy};
use crate::http::streams::{SSE_KEEP_ALIVE, StreamSlot, reconnect_hint_frame, sse_response};
use crate::state::AppState;

/// Live leaderboard stream: `leaderboard:update` events, then `tournament:ended` and close.
#[utoipa::path(get, path = "/api/tournaments/{id}/live", operation_id = "watch_tournament_live",
    security(()), tag = "tournaments",
    params(("id" = String, Path, description = "Tournament id"), InviteParams),
    responses((status = 200, description = "text/event-stream of leaderboard:update and tournament:ended"),
              (status = 404), (status = 429)))]
pub(super) async fn live(
    _limit: IpLimit<LivePolicy>,
    slot: StreamSlot,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(invite): Query<InviteParams>,
) -> Result<Response, ApiError> {
    super::routes::visible(&state, &id, invite.invite_code.as_deref()).await?;
    let reads = BoardReads {
        store: state.store.clone(),
        clock: state.clock.clone(),
        leaderboards: state.leaderboards.clone(),
        events: state.events.clone(),
    };
    let frames = state.board_feeds.watch(&reads, &id);
    let pings = frames.borrow().pings;
    let watcher = Watcher {
        pings,
        frames,
        sent_board: 0,
        slot,
        done: false,
    };
    let stream = futures_util::stream::unfold(watcher, |mut watcher| async move {
        let frame = watcher.next().await?;
        Some((frame, watcher))
    });
    Ok(sse_response(stream))
}

/// One client's stream: what it has sent of its feed's frames.
struct Watcher {
    frames: watch::Receiver<Frame>,
    /// The version of the last board sent (0: none yet).
    sent_board: u64,
    /// The keep-alives seen so far.
    pings: u64,
    /// This stream's place among the open ones; given back when the stream is dropped.
    slot: StreamSlot,
    done: bool,
}

impl Watcher {
    /// The next frame to write, or `None` when the stream is over.
    async fn next(&mut self) -> Option<Bytes> {
        let mut feed_open = true;
        loop {
            if self.done {
                return None;
            }
            let frame = self.frames.borrow_and_update().clone();
            if frame.gone {
                return None;
            }
            if !frame.board.is_empty() && frame.board_version != self.sent_board {
                self.sent_board = frame.board_version;
                return Some(frame.board);
            }
            if let Some(ended) = frame.ended {
                self.done = true;
                return Some(ended);
            }
            if frame.pings != self.pings {
                self.pings = frame.pings;
                return Some(Bytes::from_static(SSE_KEEP_ALIVE));
            }
            if !feed_open {
                // The feed ended (the node is going away) with nothing more to say.
                return None;
            }
            tokio::select! {
                () = self.slot.closing() => {
                    self.done = true;
                    return Some(reconnect_hint_frame());
                }
                changed = self.frames.changed() => {
                    // Gone with the feed: what it handed out last is read once more above.
                    feed_open = changed.is_ok();
                }
            }
        }
    }
}
