//! `GET /api/tournaments/{id}/live`: a server-sent event stream. It sends
//! `leaderboard:update` on connect, every 30 seconds and whenever the board changes, and
//! `tournament:ended` with the final standings when the window closes, then ends the stream.
//! A reconnecting client simply gets the latest board again.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::leaderboard;
use super::model::{Status, Tournament};
use super::privacy::InviteParams;
use super::queries;
use crate::events::Event;
use crate::http::ApiError;
use crate::http::json::{Path, Query};
use crate::http::rate_limit::{IpLimit, LivePolicy};
use crate::http::streams::StreamSlot;
use crate::state::AppState;

/// How often the board is pushed even when nothing changed.
pub(super) const PUSH_EVERY: Duration = Duration::from_secs(30);
/// Entries per pushed board.
const STREAM_PAGE: usize = 100;

enum Phase {
    Connect,
    Running,
    Ended,
    Done,
}

struct Live {
    state: AppState,
    id: String,
    events: tokio::sync::broadcast::Receiver<Event>,
    ticker: tokio::time::Interval,
    phase: Phase,
    /// This stream's place among the open ones; given back when the stream is dropped.
    slot: StreamSlot,
}

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
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    super::routes::visible(&state, &id, invite.invite_code.as_deref()).await?;
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + PUSH_EVERY, PUSH_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let live = Live {
        events: state.events.subscribe(),
        state,
        id,
        ticker,
        phase: Phase::Connect,
        slot,
    };
    let stream = futures_util::stream::unfold(live, |mut live| async move {
        let event = live.next().await?;
        Some((Ok(event), live))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

impl Live {
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            match self.phase {
                Phase::Done => return None,
                Phase::Connect => {
                    self.phase = Phase::Running;
                    if let Some(event) = self.board().await {
                        return Some(event);
                    }
                }
                Phase::Ended => {
                    self.phase = Phase::Done;
                    return self.ended().await;
                }
                Phase::Running => {
                    tokio::select! {
                        () = self.slot.closing() => {
                            self.phase = Phase::Done;
                            return Some(crate::http::streams::reconnect_hint());
                        }
                        _ = self.ticker.tick() => {
                            if let Some(event) = self.board().await {
                                return Some(event);
                            }
                        }
                        received = self.events.recv() => match received {
                            Ok(Event::LeaderboardChanged { tournament_id }) if tournament_id == self.id => {
                                if let Some(event) = self.board().await {
                                    return Some(event);
                                }
                            }
                            Ok(Event::TournamentEnded { tournament_id }) if tournament_id == self.id => {
                                self.phase = Phase::Ended;
                            }
                            // Missed events (here, or from other nodes): the current board
                            // says it all.
                            Ok(Event::Resync) | Err(RecvError::Lagged(_)) => {
                                if let Some(event) = self.board().await {
                                    return Some(event);
                                }
                            }
                            Ok(_) => {}
                            Err(RecvError::Closed) => self.phase = Phase::Done,
                        },
                    }
                }
            }
        }
    }

    /// The current board as `leaderboard:update`; if the tournament has already ended, the
    /// stream moves on to `tournament:ended`.
    async fn board(&mut self) -> Option<SseEvent> {
        let tournament = match queries::get(&self.state.store, &self.id).await {
            Ok(Some(tournament)) => tournament,
            Ok(None) => {
                self.phase = Phase::Done;
                return None;
            }
            Err(error) => {
                tracing::warn!(%error, tournament_id = self.id, "live stream cannot read the tournament");
                return None;
            }
        };
        if matches!(
            Status::parse(&tournament.status),
            Status::Ended | Status::Cancelled
        ) {
            self.phase = Phase::Ended;
        }
        let view = self.first_page(&tournament).await?;
        let event = SseEvent::default()
            .event("leaderboard:update")
            .json_data(&view)
            .ok()?;
        Some(match tournament.last_snapshot_at {
            Some(at) => event.id(at.to_string()),
            None => event,
        })
    }

    /// The board's first page as the stream sends it.
    async fn first_page(&self, tournament: &Tournament) -> Option<leaderboard::LeaderboardView> {
        let s = &self.state;
        leaderboard::view(
            &s.store,
            &*s.clock,
            &s.leaderboards,
            tournament,
            0,
            STREAM_PAGE,
        )
        .await
        .ok()
    }

    async fn ended(&mut self) -> Option<SseEvent> {
        let tournament = queries::get(&self.state.store, &self.id)
            .await
            .ok()
            .flatten()?;
        let standings = self.first_page(&tournament).await?;
        let payload = serde_json::json!({
            "tournamentId": tournament.id,
            "status": tournament.status_at(self.state.now()),
            "endDate": crate::clock::rfc3339(crate::clock::from_millis(tournament.end_date)),
            "standings": standings,
        });
        SseEvent::default()
            .event("tournament:ended")
            .json_data(payload)
            .ok()
    }
}
