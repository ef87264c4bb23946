//! `GET /api/dungeons/runs/{runId}/watch`: a server-sent event stream
//! of one run. On connect it replays the run's stored events (after `Last-Event-ID` when the
//! client resumes), then follows live `run:turn`, `run:broadcast` and `run:ended`, and closes
//! after `run:ended`. Event ids are the run's sequence numbers.
//!
//! The database is the only source: a bus message just says "there is more", and the stream
//! reads what follows the last id it sent, so a slow or lagging watcher never skips or reorders
//! anything.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;

use super::store::{self, StoredEvent};
use crate::events::Topic;
use crate::http::streams::StreamSlot;
use crate::state::AppState;

/// Events read from the database per round trip.
const PAGE: i64 = 200;
/// Keep-alive comment interval.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

struct Watch {
    state: AppState,
    run_id: String,
    last_seq: i64,
    buffer: VecDeque<StoredEvent>,
    /// Changes when the run stores more events (and only then: a watcher is not woken by the
    /// turns of other runs).
    wakes: tokio::sync::watch::Receiver<u64>,
    done: bool,
    /// This stream's place among the open ones; given back when the stream is dropped.
    slot: StreamSlot,
}

/// The stream of `run_id` from after `last_seq`.
pub(super) fn stream(
    state: AppState,
    run_id: String,
    last_seq: i64,
    slot: StreamSlot,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let watch = Watch {
        // Watching before the first read, so nothing written in between is missed.
        wakes: state.events.watch(Topic::Run(run_id.clone())),
        state,
        run_id,
        last_seq,
        buffer: VecDeque::new(),
        done: false,
        slot,
    };
    let stream = futures_util::stream::unfold(watch, |mut watch| async move {
        let event = watch.next().await?;
        Some((Ok(event), watch))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

impl Watch {
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                self.last_seq = event.seq;
                if event.kind == store::ENDED {
                    self.done = true;
                    self.buffer.clear();
                }
                return Some(
                    SseEvent::default()
                        .id(event.seq.to_string())
                        .event(event.kind)
                        .data(event.payload.to_string()),
                );
            }
            if self.done {
                return None;
            }
            match store::events_after(&self.state.store, &self.run_id, self.last_seq, PAGE).await {
                Ok(events) if !events.is_empty() => {
                    self.buffer.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(run_id = self.run_id, error = %error, "watch stream cannot read events");
                    return None;
                }
            }
            // Everything stored has been sent. A run that is over has nothing more to say — once
            // what its last turn stored is read: that turn may have committed (events and end
            // together) between the read above and this check.
            match store::load(&self.state.store, &self.run_id).await {
                Ok(Some(row)) if row.is_active() => {}
                _ => {
                    let last =
                        store::events_after(&self.state.store, &self.run_id, self.last_seq, PAGE);
                    match last.await {
                        Ok(events) if !events.is_empty() => {
                            self.buffer.extend(events);
                            continue;
                        }
                        _ => return None,
                    }
                }
            }
            tokio::select! {
                () = self.slot.closing() => {
                    // Said once; the next call ends the stream.
                    self.done = true;
                    return Some(crate::http::streams::reconnect_hint());
                }
                woke = self.wakes.changed() => {
                    // The run's topic outlives its watchers: gone only with the node.
                    woke.ok()?;
                }
            }
        }
    }
}
