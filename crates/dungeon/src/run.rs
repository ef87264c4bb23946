//! One adventurer's run through a day's dungeon: the state machine `active` → `cleared` | `dead` |
//! `exhausted` | `abandoned`, the turn pipeline (legality, AP, randomness, end conditions) and
//! replay. A run is a pure value: the same map, class, run seed and actions always give the same
//! run, so the stored action list is the source of truth and the serde form a cache of it.

use serde::{Deserialize, Serialize};

use super::entities::{Class, Player};
use super::event::GameEvent;
use super::map::{DungeonMap, Room};
use super::rng::Rng;
use super::rules::{Action, ActionKind};
use super::score::Tally;

/// Turns after which a run that only ever takes free actions is abandoned as protocol abuse.
pub(crate) const MAX_TURNS: u64 = 1000;
/// AP charged for an action that is not available.
pub const ILLEGAL_ACTION_AP: i32 = 1;

/// How a run stands: still being played, or how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Still being played.
    Active,
    /// The final boss is beaten.
    Cleared,
    /// HP reached 0.
    Dead,
    /// AP can no longer pay for any action.
    Exhausted,
    /// Idle timeout, or the turn cap of free actions.
    Abandoned,
}

impl RunStatus {
    /// The status's name in the API and in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Active => "active",
            RunStatus::Cleared => "cleared",
            RunStatus::Dead => "dead",
            RunStatus::Exhausted => "exhausted",
            RunStatus::Abandoned => "abandoned",
        }
    }

    /// Whether the run has ended, whichever way.
    pub fn is_over(self) -> bool {
        self != RunStatus::Active
    }

    /// The status named `name` (as [`RunStatus::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Self> {
        [
            RunStatus::Active,
            RunStatus::Cleared,
            RunStatus::Dead,
            RunStatus::Exhausted,
            RunStatus::Abandoned,
        ]
        .into_iter()
        .find(|status| status.as_str() == name)
    }
}

/// A name that is no [`RunStatus`] (a stored value outside the set [`RunStatus::as_str`] writes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown run status `{0}`")]
pub struct UnknownRunStatus(pub String);

/// Reads a status as stored (`#[sqlx(try_from = "String")]` on the server's run rows): anything
/// outside the set fails the read rather than passing on as a string.
impl TryFrom<String> for RunStatus {
    type Error = UnknownRunStatus;

    fn try_from(stored: String) -> Result<Self, UnknownRunStatus> {
        RunStatus::parse(&stored).ok_or(UnknownRunStatus(stored))
    }
}

/// A legal turn's result; the caller reads the new state with [`Run::view`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnOutcome {
    /// The turn's number (the first turn is 1).
    pub turn_number: u64,
    /// The action played.
    pub action: ActionKind,
    /// What it was aimed at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// AP it cost.
    pub ap_spent: i32,
    /// What happened, in order.
    pub events: Vec<GameEvent>,
}

/// Why a turn was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// Not in `availableActions`, or a target that is not there. 1 AP was charged and the turn
    /// number did not advance; `events` says so (and may end the run as exhausted).
    #[error("`{action}` is not a legal action now: {reason}")]
    Illegal {
        /// The action as sent.
        action: String,
        /// Why it is not legal.
        reason: String,
        /// The actions that were.
        legal: Vec<ActionKind>,
        /// The refusal's events ([`GameEvent::IllegalAction`], perhaps the run's end).
        events: Vec<GameEvent>,
    },
    /// The run has ended; nothing was charged.
    #[error("the run is over ({})", status.as_str())]
    RunOver {
        /// How it ended.
        status: RunStatus,
    },
}

/// One run: the day's map as this run changed it, the player, and what has been played.
/// Serialisable, so the server can cache it; the actions alone can always rebuild it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub(super) dungeon_id: String,
    pub(super) map_seed: u64,
    pub(super) run_seed: u64,
    pub(super) theme: String,
    /// The run's own copy of the map, mutated as enemies die, traps spring and items are taken.
    pub(super) rooms: Vec<Room>,
    pub(super) player: Player,
    pub(super) room: usize,
    /// Where `flee` leads: the room last entered from.
    pub(super) came_from: Option<usize>,
    pub(super) visited: Vec<bool>,
    pub(super) examined: Vec<bool>,
    pub(super) rested: Vec<bool>,
    pub(super) status: RunStatus,
    /// Legal turns played.
    pub(super) turn_number: u64,
    /// Every action submitted, legal or not: the index of each turn's random stream.
    pub(super) actions_taken: u64,
    pub(super) tally: Tally,
    pub(super) boss_slain: bool,
}

impl Run {
    /// A fresh run at the first floor's entrance. `run_seed` (e.g. from the run id via
    /// `rng::seed_from_str`) varies the dice between runs of the same map.
    pub fn new(map: &DungeonMap, class: Class, run_seed: u64) -> Run {
        let count = map.rooms.len();
        let mut run = Run {
            dungeon_id: map.id.clone(),
            map_seed: map.seed,
            run_seed,
            theme: map.theme.clone(),
            rooms: map.rooms.clone(),
            player: Player::new(class),
            room: DungeonMap::entrance(1),
            came_from: None,
            visited: vec![false; count],
            examined: vec![false; count],
            rested: vec![false; count],
            status: RunStatus::Active,
            turn_number: 0,
            actions_taken: 0,
            tally: Tally {
                deepest_floor: 1,
                ..Tally::default()
            },
            boss_slain: false,
        };
        let mut events = Vec::new();
        run.enter_room(
            run.room,
            &mut Rng::derive(&[map.seed, run_seed]),
            &mut events,
        );
        run
    }

    /// Rebuilds a run from its stored actions (refused ones included, since they cost AP).
    #[cfg(test)]
    pub(crate) fn replay(map: &DungeonMap, class: Class, run_seed: u64, actions: &[Action]) -> Run {
        let mut run = Run::new(map, class, run_seed);
        for action in actions {
            // A refusal is part of the history being replayed, not a failure of the replay.
            let _ = run.apply(action);
        }
        run
    }

    /// Where the run stands.
    pub fn status(&self) -> RunStatus {
        self.status
    }

    /// The run's score, recomputed from its [`Tally`].
    pub fn score(&self) -> i64 {
        self.tally.score()
    }

    /// The counters the score is made of.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The class the run plays.
    pub fn class(&self) -> Class {
        self.player.class
    }

    #[cfg(test)]
    pub(crate) fn player(&self) -> &Player {
        &self.player
    }

    /// Legal turns played so far.
    pub fn turn_number(&self) -> u64 {
        self.turn_number
    }

    /// Plays one turn.
    pub fn apply(&mut self, action: &Action) -> Result<TurnOutcome, TurnError> {
        if self.status.is_over() {
            return Err(TurnError::RunOver {
                status: self.status,
            });
        }
        self.actions_taken += 1;
        let kind = match self.check(action) {
            Ok(kind) => kind,
            Err(reason) => return Err(self.refuse(action, reason)),
        };
        let mut rng = Rng::derive(&[self.map_seed, self.run_seed, self.actions_taken]);
        let cost = kind.cost();
        self.player.spend(cost);
        self.turn_number += 1;
        let mut events = Vec::new();
        self.execute(kind, action.target.as_deref(), &mut rng, &mut events);
        self.settle(&mut events);
        Ok(TurnOutcome {
            turn_number: self.turn_number,
            action: kind,
            target: action.target.clone(),
            ap_spent: cost,
            events,
        })
    }

    /// Ends an active run as abandoned (idle timeout, enforced by the caller); returns the
    /// `run_ended` event, or nothing if the run was already over.
    pub fn abandon(&mut self) -> Vec<GameEvent> {
        if self.status.is_over() {
            return Vec::new();
        }
        self.status = RunStatus::Abandoned;
        vec![self.ended_event()]
    }

    fn refuse(&mut self, action: &Action, reason: String) -> TurnError {
        self.player.spend(ILLEGAL_ACTION_AP);
        let mut events = vec![GameEvent::IllegalAction {
            action: action.action.clone(),
            reason: reason.clone(),
            ap_charged: ILLEGAL_ACTION_AP,
        }];
        self.settle(&mut events);
        TurnError::Illegal {
            action: action.action.clone(),
            reason,
            legal: self.legal_actions(),
            events,
        }
    }

    /// Applies the end conditions after anything happened.
    fn settle(&mut self, events: &mut Vec<GameEvent>) {
        if self.status.is_over() {
            return;
        }
        let next = if self.player.hp == 0 {
            RunStatus::Dead
        } else if self.boss_slain {
            self.tally.cleared_with = Some((self.player.ap, self.player.hp));
            RunStatus::Cleared
        } else if self.legal_actions().iter().all(|kind| kind.cost() == 0) {
            RunStatus::Exhausted
        } else if self.turn_number >= MAX_TURNS {
            RunStatus::Abandoned
        } else {
            return;
        };
        self.status = next;
        events.push(self.ended_event());
    }

    fn ended_event(&self) -> GameEvent {
        GameEvent::RunEnded {
            status: self.status,
            score: self.score(),
        }
    }
}
