//! The dungeon game engine: pure and deterministic. A day's [`DungeonMap`] comes from
//! the date and a deployment salt; a [`Run`] is that map + a class + a run seed + the actions
//! played, and the same inputs always give the same states, events and score. No I/O, no clock,
//! no database, no global randomness may ever enter this module: the HTTP layer stores the actions
//! and can always rebuild a run by replaying them.
//!
//! ```
//! use crucible_dungeon::{Action, ActionKind, Class, DungeonMap, Run};
//!
//! let map = DungeonMap::for_date(2026, 11, 23, "deployment-salt");
//! let mut run = Run::new(&map, Class::Rogue, 42);
//! let state = run.view();
//! let exit = state.room.exits[0].direction.clone();
//! let outcome = run.apply(&Action::new(ActionKind::Move, Some(&exit))).expect("a legal move");
//! assert_eq!(outcome.turn_number, 1);
//! assert_eq!(run.view().player.ap, 99);
//! ```

#![warn(unreachable_pub, missing_docs)]

mod actions;
pub mod agent;
mod combat;
pub(crate) mod entities;
pub(crate) mod event;
pub mod map;
pub mod rng;
mod rules;
mod run;
mod score;
pub mod skill;
mod theme;
mod view;

#[cfg(test)]
mod tests;

pub use entities::Class;
pub use event::GameEvent;
pub use map::DungeonMap;
pub use rules::{Action, ActionKind};
pub use run::{ILLEGAL_ACTION_AP, Run, RunStatus, TurnError, TurnOutcome, UnknownRunStatus};
pub use score::Tally;
pub use view::VisibleState;
