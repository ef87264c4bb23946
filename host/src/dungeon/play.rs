//! Playing a run: turns, broadcasts and abandonment.
//!
//! A turn loads the run, applies the action with the pure engine and stores the new state with
//! its events in one transaction guarded by the run's version: two turns racing on one run are
//! serialized (the loser reloads and plays on the newer state, or finds its turn already
//! played). A retried turn — same `turnNumber` — is answered from the stored `run:turn` event
//! and never played twice. An illegal action is refused with 400 listing the legal ones; it still
//! costs 1 AP (so a confused agent cannot loop forever), so the charge is stored (and watched)
//! like a turn.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::DungeonError;
use super::game::{GameEvent, Run, TurnError};
use super::run_cache::RunCache;
use super::store::{self, Advance, Mover, NewEvent, RunHead};
use super::turn_request::TurnRequest;
use crate::clock::Clock;
use crate::clock::to_millis;
use crate::db::Store;
use crate::events::Bus;
use crate::http::rate_limit::Limited;

/// Longest broadcast, in characters.
pub(crate) use super::game::skill::BROADCAST_MAX_CHARS;
/// Broadcasts allowed per run per minute.
pub(crate) const BROADCASTS_PER_MINUTE: i64 = 5;
/// Attempts at a contended run before giving up with 409.
const RACE_RETRIES: usize = 16;

/// What a turn request produced: its answer, already JSON.
pub(crate) enum TurnResult {
    /// A legal turn (played now, or replayed from the record): the 200 body, a [`TurnReply`].
    Played(String),
    /// Not legal (1 AP charged, the turn number did not advance): the 400 body, an
    /// [`IllegalTurn`].
    Illegal(String),
}

/// The reply to a turn: the whole visible state, plus what the turn did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnReply {
    /// The visible state after the turn: room, player, `availableActions`, score, `turnNumber`,
    /// status (the run page's `state`).
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub state: Map<String, Value>,
    pub run_id: String,
    pub last_turn: LastTurn,
    /// True when this `turnNumber` had been played already: the answer comes from the record.
    pub replayed: bool,
}

/// The 400 body of an illegal action: the error form plus what is legal now, and the state
/// after the 1 AP charge.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IllegalTurn {
    pub error: String,
    pub available_actions: Value,
    pub state: TurnReply,
}

/// What a turn did, as its `run:turn` event records it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LastTurn {
    pub turn_number: u64,
    pub action: String,
    pub target: Option<String>,
    /// False for an illegal action (1 AP charged, the turn number did not advance).
    pub legal: bool,
    pub ap_spent: i64,
    /// The game's events, in order.
    pub events: Vec<Value>,
}

/// Play one turn of `current`'s run (the head as the key check read it, `fresh`, or as this
/// node's last write left it; reloaded after a race). The run's state comes from this node's
/// [`RunCache`] when it holds that version, and from the database otherwise. Nothing is refused
/// on a head from memory alone: a turn that looks ahead of it, or a write its guards refuse
/// (another writer moved the run, the account was suspended), reads the run again first.
pub(crate) async fn turn(
    store: &Store,
    clock: &dyn Clock,
    bus: &Bus,
    runs: &RunCache,
    current: RunHead,
    fresh: bool,
    request: TurnRequest,
) -> Result<TurnResult, DungeonError> {
    let request = request.clipped();
    let run_id = current.id.clone();
    let run_id = run_id.as_str();
    let mut hint = Some(current);
    let mut fresh = fresh;
    // The key check reads the account's suspension; a head from memory, or a write refused by
    // its guards, asks again when the run is read.
    let mut check_suspension = !fresh;
    for _ in 0..RACE_RETRIES {
        let (row, loaded) = match hint.take() {
            Some(head) => (head, None),
            None => {
                if check_suspension
                    && let Some(reason) = store::suspension_of_run(store, run_id).await?
                {
                    return Err(DungeonError::AccountSuspended(reason));
                }
                let row = store::load(store, run_id)
                    .await?
                    .ok_or_else(|| DungeonError::UnknownRun(run_id.to_owned()))?;
                let run = store::game(store, &row).await?;
                fresh = true;
                (row.head, Some(run))
            }
        };
        if let Some(number) = request.turn_number {
            let number = i64::try_from(number).unwrap_or(i64::MAX);
            if number < 1 {
                return Err(DungeonError::Invalid(
                    "`turnNumber` starts at 1: send the state's turnNumber + 1".into(),
                ));
            }
            if number <= row.turn_number {
                let record = store::turn_record(store, run_id, number)
                    .await?
                    .ok_or_else(|| {
                        DungeonError::internal(anyhow::anyhow!(
                            "turn {number} of {run_id} has no record"
                        ))
                    })?;
                let reply = reply_from_record(record, true)?;
                return serde_json::to_string(&reply)
                    .map(TurnResult::Played)
                    .map_err(DungeonError::internal);
            }
            if number > row.turn_number + 1 {
                if !fresh {
                    // Another node may have played the turns in between: read the run.
                    continue;
                }
                return Err(DungeonError::OutOfTurn(format!(
                    "`turnNumber` {number} is ahead of the run: the next turn is {}",
                    row.turn_number + 1
                )));
            }
        }
        if !row.is_active() {
            if !fresh {
                continue;
            }
            return Err(ended(&row));
        }
        let Some(mut run) = loaded.or_else(|| runs.take(run_id, row.version)) else {
            // Not held here at this version: read the row.
            continue;
        };
        let action = request.to_action();
        let outcome = run.apply(&action);
        let (written, illegal) = match outcome {
            Ok(outcome) => (
                TurnJson::played(run_id, &outcome, &run.view()).map_err(DungeonError::internal)?,
                None,
            ),
            Err(TurnError::Illegal {
                action: name,
                reason,
                legal,
                events,
            }) => {
                let names: Vec<&str> = legal.iter().map(|kind| kind.as_str()).collect();
                let message = format!(
                    "`{name}` is not a legal action now ({reason}); legal actions: {}. 1 AP was charged; the turn number did not advance",
                    if names.is_empty() {
                        "none, the run is over".to_owned()
                    } else {
                        names.join(", ")
                    }
                );
                let view = run.view();
                let written = TurnJson::refused(
                    run_id,
                    run.turn_number(),
                    &name,
                    &action,
                    &reason,
                    &events,
                    &view,
                )
                .map_err(DungeonError::internal)?;
                (written, Some((message, view.available_actions)))
            }
            Err(TurnError::RunOver { .. }) => return Err(ended(&row)),
        };
        let mut events = vec![NewEvent {
            kind: store::TURN,
            turn_number: illegal.is_none().then_some(run.turn_number() as i64),
            payload: written.record,
            action: Some(serde_json::to_string(&action).map_err(DungeonError::internal)?),
        }];
        if run.status().is_over() {
            events.push(ended_event(run_id, &run));
        }
        match store::advance(store, clock, bus, &row, &run, events, Mover::Player).await? {
            Advance::Raced => {
                check_suspension = true;
                continue;
            }
            Advance::Written => {}
        }
        let over = run.status().is_over();
        let (status, score) = (run.status(), run.score());
        if !over {
            let head = RunHead {
                version: row.version + 1,
                turn_number: run.turn_number() as i64,
                score,
                deepest_floor: i64::from(run.tally().deepest_floor),
                ..row
            };
            runs.put(head, run);
        }
        if over {
            tracing::info!(run_id, status = status.as_str(), score, "dungeon run ended");
        }
        return match illegal {
            None => Ok(TurnResult::Played(written.reply)),
            Some((message, available)) => refusal(&message, &available, &written.reply)
                .map(TurnResult::Illegal)
                .map_err(DungeonError::internal),
        };
    }
    Err(DungeonError::OutOfTurn(
        "this run is being played by several requests at once; send one turn at a time".into(),
    ))
}

/// [`LastTurn`] without its events: the fields a turn's record and its reply share.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LastTurnHead<'a, A> {
    turn_number: u64,
    action: A,
    target: Option<&'a str>,
    legal: bool,
    ap_spent: i64,
}

/// A turn just played, as JSON: its `run:turn` record and its reply ([`TurnReply`]), spliced
/// from pieces each serialized once. The state is most of both, and serializing it into a
/// `Value`, then the record, then the reply again took a fifth of a turn's time.
struct TurnJson {
    record: String,
    reply: String,
}

impl TurnJson {
    /// A legal turn's.
    fn played(
        run_id: &str,
        outcome: &super::game::TurnOutcome,
        state: &super::game::VisibleState,
    ) -> serde_json::Result<Self> {
        let head = LastTurnHead {
            turn_number: outcome.turn_number,
            action: outcome.action,
            target: outcome.target.as_deref(),
            legal: true,
            ap_spent: i64::from(outcome.ap_spent),
        };
        Self::new(run_id, &head, None, &outcome.events, state)
    }

    /// An illegal action's (1 AP charged at `turn_number`, which did not advance): `name` as
    /// sent, aimed at `action`'s target, refused for `reason`.
    fn refused(
        run_id: &str,
        turn_number: u64,
        name: &str,
        action: &super::game::Action,
        reason: &str,
        events: &[GameEvent],
        state: &super::game::VisibleState,
    ) -> serde_json::Result<Self> {
        let head = LastTurnHead {
            turn_number,
            action: name,
            target: action.target.as_deref(),
            legal: false,
            ap_spent: i64::from(super::game::ILLEGAL_ACTION_AP),
        };
        Self::new(run_id, &head, Some(reason), events, state)
    }

    fn new<A: Serialize>(
        run_id: &str,
        head: &LastTurnHead<'_, A>,
        reason: Option<&str>,
        events: &[GameEvent],
        state: &super::game::VisibleState,
    ) -> serde_json::Result<Self> {
        let run_id = serde_json::to_string(run_id)?;
        let head = serde_json::to_string(head)?;
        let events = serde_json::to_string(events)?;
        let state = serde_json::to_string(state)?;
        let (head_fields, state_fields) = (object_fields(&head), object_fields(&state));
        let reason = match reason {
            Some(reason) => format!(",\"reason\":{}", serde_json::to_string(reason)?),
            None => String::new(),
        };
        let record = format!(
            "{{\"runId\":{run_id},{head_fields}{reason},\"events\":{events},\"state\":{state}}}"
        );
        let reply = format!(
            "{{{state_fields},\"runId\":{run_id},\"lastTurn\":{{{head_fields},\"events\":{events}}},\"replayed\":false}}"
        );
        Ok(Self { record, reply })
    }
}

/// The 400 body of an illegal action ([`IllegalTurn`]) around its `reply`.
fn refusal(
    message: &str,
    available: &[super::game::ActionKind],
    reply: &str,
) -> serde_json::Result<String> {
    Ok(format!(
        "{{\"error\":{},\"availableActions\":{},\"state\":{reply}}}",
        serde_json::to_string(message)?,
        serde_json::to_string(available)?,
    ))
}

/// What is between an object's braces: `"a":1,"b":2` of `{"a":1,"b":2}`.
fn object_fields(object: &str) -> &str {
    object
        .strip_prefix('{')
        .and_then(|fields| fields.strip_suffix('}'))
        .unwrap_or_default()
}

/// The reply to a turn from its `run:turn` record.
/// Taken apart, not copied: the state is most of a turn's reply.
fn reply_from_record(mut record: Value, replayed: bool) -> Result<TurnReply, DungeonError> {
    let Some(Value::Object(state)) = record.get_mut("state").map(Value::take) else {
        return Err(DungeonError::internal(anyhow::anyhow!(
            "a turn record without its state"
        )));
    };
    let run_id = record["runId"].as_str().unwrap_or_default().to_owned();
    Ok(TurnReply {
        state,
        run_id,
        last_turn: LastTurn::deserialize(record).map_err(DungeonError::internal)?,
        replayed,
    })
}

fn ended_event(run_id: &str, run: &Run) -> NewEvent {
    NewEvent {
        kind: store::ENDED,
        turn_number: None,
        action: None,
        payload: json!({
            "runId": run_id,
            "status": run.status(),
            "score": run.score(),
            "deepestFloor": run.tally().deepest_floor,
            "turnNumber": run.turn_number(),
            "cleared": run.status() == super::game::RunStatus::Cleared,
        })
        .to_string(),
    }
}

fn ended(row: &RunHead) -> DungeonError {
    DungeonError::RunEnded {
        run_id: row.id.clone(),
        status: Some(row.status.as_str().to_owned()),
    }
}

/// `POST .../broadcast`: a message for the watchers, at most 280 characters and
/// [`BROADCASTS_PER_MINUTE`] per run. Returns the event's sequence number.
pub(crate) async fn broadcast(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    run_id: &str,
    message: &str,
) -> Result<i64, DungeonError> {
    let message = message.trim();
    let length = message.chars().count();
    if length == 0 || length > BROADCAST_MAX_CHARS {
        return Err(DungeonError::Invalid(format!(
            "`message` must be 1 to {BROADCAST_MAX_CHARS} characters (got {length})"
        )));
    }
    let event = NewEvent {
        kind: store::BROADCAST,
        turn_number: None,
        action: None,
        payload: json!({
            "runId": run_id,
            "message": message,
            "at": crate::clock::rfc3339(clock.now()),
        })
        .to_string(),
    };
    let limit = store::WindowLimit {
        max: BROADCASTS_PER_MINUTE,
        window_ms: 60_000,
    };
    match store::append_broadcast(store, clock, events, run_id, event, limit).await? {
        store::Appended::Written(seq) => Ok(seq),
        store::Appended::Ended => Err(DungeonError::RunEnded {
            run_id: run_id.to_owned(),
            status: None,
        }),
        store::Appended::Limited { oldest_at } => {
            let wait_ms = (oldest_at + 60_000 - to_millis(clock.now())).max(1);
            Err(DungeonError::Limited(Limited {
                retry_after: ((wait_ms + 999) / 1000) as u64,
            }))
        }
    }
}

/// End an active run as abandoned (idle timeout). False if it was already over.
pub(crate) async fn abandon(
    store: &Store,
    clock: &dyn Clock,
    events: &Bus,
    run_id: &str,
) -> Result<bool, DungeonError> {
    for _ in 0..RACE_RETRIES {
        let Some(row) = store::load(store, run_id).await? else {
            return Ok(false);
        };
        if !row.is_active() {
            return Ok(false);
        }
        let mut run = store::game(store, &row).await?;
        let ended = run.abandon();
        if !ended
            .iter()
            .any(|event| matches!(event, GameEvent::RunEnded { .. }))
        {
            return Ok(false);
        }
        match store::advance(
            store,
            clock,
            events,
            &row,
            &run,
            vec![ended_event(run_id, &run)],
            Mover::Server,
        )
        .await?
        {
            Advance::Raced => continue,
            Advance::Written => {
                tracing::info!(run_id, score = run.score(), "idle dungeon run abandoned");
                return Ok(true);
            }
        }
    }
    Err(DungeonError::OutOfTurn(format!(
        "run {run_id} kept changing while being abandoned"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dungeon::game::{Action, ActionKind, Class, DungeonMap};

    fn run() -> Run {
        let map = DungeonMap::for_date(2026, 11, 26, "test");
        Run::new(&map, Class::Fighter, 7)
    }

    /// The reply as serde would write it from the record, the form a replayed turn answers.
    fn reply_through_serde(record: &str) -> Value {
        let record: Value = serde_json::from_str(record).expect("the record is JSON");
        serde_json::to_value(reply_from_record(record, false).expect("a reply")).expect("json")
    }

    #[test]
    fn a_played_turns_record_and_reply_are_the_same_json_as_serde_writes() {
        let mut run = run();
        let exit = run.view().room.exits[0].direction.clone();
        let action = Action::new(ActionKind::Move, Some(&exit));
        let outcome = run.apply(&action).expect("a legal action");
        let written = TurnJson::played("run_1", &outcome, &run.view()).expect("json");
        let record: Value = serde_json::from_str(&written.record).expect("record");
        assert_eq!(
            record,
            json!({
                "runId": "run_1",
                "turnNumber": outcome.turn_number,
                "action": outcome.action,
                "target": outcome.target,
                "legal": true,
                "apSpent": outcome.ap_spent,
                "events": outcome.events,
                "state": run.view(),
            })
        );
        let reply: Value = serde_json::from_str(&written.reply).expect("reply");
        assert_eq!(reply, reply_through_serde(&written.record));
        assert_eq!(reply["replayed"], false);
        assert_eq!(reply["lastTurn"]["turnNumber"], 1);
        assert_eq!(reply["turnNumber"], 1, "the state's fields at the top");
    }

    #[test]
    fn an_illegal_turns_refusal_is_the_documented_body() {
        let mut run = run();
        let action = Action {
            action: "dance".into(),
            target: Some("the \"moon\"".into()),
        };
        let Err(TurnError::Illegal {
            action: name,
            reason,
            events,
            ..
        }) = run.apply(&action)
        else {
            panic!("dancing is not an action");
        };
        let view = run.view();
        let written = TurnJson::refused(
            "run_1",
            run.turn_number(),
            &name,
            &action,
            &reason,
            &events,
            &view,
        )
        .expect("json");
        let record: Value = serde_json::from_str(&written.record).expect("record");
        assert_eq!(record["reason"], reason.as_str());
        assert_eq!(record["target"], "the \"moon\"");
        let body = refusal("not legal", &view.available_actions, &written.reply).expect("body");
        let body: Value = serde_json::from_str(&body).expect("refusal");
        let through_serde = serde_json::to_value(IllegalTurn {
            error: "not legal".into(),
            available_actions: serde_json::to_value(&view.available_actions).expect("json"),
            state: reply_from_record(record, false).expect("reply"),
        })
        .expect("json");
        assert_eq!(body, through_serde);
        assert!(
            body["state"]["lastTurn"].get("reason").is_none(),
            "the reason is the record's, not the reply's"
        );
    }
}
