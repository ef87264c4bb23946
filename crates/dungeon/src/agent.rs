//! Two reference agents that play from the visible state alone, as an HTTP client would: a greedy
//! scripted one (fight, disarm, solve, heal when low, rest sometimes, explore towards the stairs)
//! and a random one (tests only). They measure the game's balance and drive end-to-end tests of the
//! API.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::map::DOWN;
use super::rules::{Action, ActionKind};
use super::view::{ExitView, VisibleState};

/// Anything that picks the next action from the visible state.
pub trait Agent {
    /// The action to play next.
    fn decide(&mut self, state: &VisibleState) -> Action;
}

/// The greedy scripted agent. It remembers the exits of the rooms it has seen (agents may keep
/// notes; the game never requires it) to walk back to unexplored corners.
#[derive(Debug, Default)]
pub struct GreedyAgent {
    exits: BTreeMap<String, Vec<ExitView>>,
    /// Rooms last seen with living enemies (fled from, to come back to when healed).
    guarded: BTreeSet<String>,
}

impl GreedyAgent {
    /// An agent that has seen nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn has(state: &VisibleState, kind: ActionKind) -> bool {
        state.available_actions.contains(&kind)
    }

    fn item(state: &VisibleState, ids: &[&str]) -> Option<String> {
        ids.iter()
            .find(|id| state.player.inventory.iter().any(|e| e.id == **id))
            .map(|id| (*id).to_owned())
    }

    /// First step of a shortest known path to a room not yet visited, if any.
    fn explore(&self, here: &str) -> Option<String> {
        let mut seen = BTreeSet::from([here.to_owned()]);
        let mut queue = VecDeque::new();
        for exit in self.exits.get(here)?.iter().filter(|e| e.direction != DOWN) {
            if seen.insert(exit.room_id.clone()) {
                queue.push_back((exit.room_id.clone(), exit.direction.clone()));
            }
        }
        while let Some((room, first)) = queue.pop_front() {
            if self.guarded.contains(&room) {
                return Some(first);
            }
            let Some(exits) = self.exits.get(&room) else {
                return Some(first);
            };
            for exit in exits.iter().filter(|e| e.direction != DOWN) {
                if seen.insert(exit.room_id.clone()) {
                    queue.push_back((exit.room_id.clone(), first.clone()));
                }
            }
        }
        None
    }
}

impl Agent for GreedyAgent {
    fn decide(&mut self, state: &VisibleState) -> Action {
        let here = state.room.room_id.clone();
        self.exits.insert(here.clone(), state.room.exits.clone());
        if state.room.enemies.is_empty() {
            self.guarded.remove(&here);
        } else {
            self.guarded.insert(here.clone());
        }
        let p = &state.player;
        let fighting = !state.room.enemies.is_empty();
        let use_item = |id: String| Action::new(ActionKind::UseItem, Some(&id));

        if Self::has(state, ActionKind::UseItem) && p.hp * 100 < p.max_hp * 45 {
            let order: &[&str] = if p.max_hp - p.hp >= 60 {
                &["greater-potion", "health-potion"]
            } else {
                &["health-potion", "greater-potion"]
            };
            if let Some(id) = Self::item(state, order) {
                return use_item(id);
            }
        }
        if fighting {
            // Out of potions and about to fall: step back, rest, come again.
            let threat: i32 = state
                .room
                .enemies
                .iter()
                .map(|e| (e.atk - p.def).max(1) + 2)
                .sum();
            let potions = Self::item(state, &["health-potion", "greater-potion"]).is_some();
            if p.hp <= threat && !potions && Self::has(state, ActionKind::Flee) {
                return Action::new(ActionKind::Flee, None);
            }
            if let Some(id) =
                Self::item(state, &["fire-bomb"]).filter(|_| state.room.enemies.len() >= 2)
            {
                return use_item(id);
            }
            if Self::has(state, ActionKind::Fight) {
                let weakest = state
                    .room
                    .enemies
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, e)| e.hp)
                    .map_or(1, |(i, _)| i + 1);
                return Action::new(ActionKind::Fight, Some(&weakest.to_string()));
            }
        }
        if let Some(id) = Self::item(state, &["vigor-elixir"]).filter(|_| p.ap < 25) {
            return use_item(id);
        }
        if Self::has(state, ActionKind::Disarm) {
            return Action::new(ActionKind::Disarm, None);
        }
        if Self::has(state, ActionKind::Solve) && p.hp > 30 && p.ap > 30 {
            return Action::new(ActionKind::Solve, None);
        }
        if Self::has(state, ActionKind::Rest) && p.hp * 100 < p.max_hp * 70 && p.ap > 20 {
            return Action::new(ActionKind::Rest, None);
        }
        if Self::has(state, ActionKind::Examine) && p.ap > 60 && state.room.floor >= 2 {
            return Action::new(ActionKind::Examine, None);
        }
        if Self::has(state, ActionKind::Move) {
            if state.room.exits.iter().any(|e| e.direction == DOWN) {
                return Action::new(ActionKind::Move, Some(DOWN));
            }
            if let Some(direction) = self.explore(&here) {
                return Action::new(ActionKind::Move, Some(&direction));
            }
        }
        let fallback = state
            .available_actions
            .iter()
            .copied()
            .find(|k| *k != ActionKind::Inventory && *k != ActionKind::Move)
            .unwrap_or(ActionKind::Inventory);
        let target = match fallback {
            ActionKind::UseItem => state.player.inventory.first().map(|e| e.id.clone()),
            _ => None,
        };
        Action::new(fallback, target.as_deref())
    }
}

/// Picks uniformly among the available actions and their targets.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct RandomAgent {
    rng: super::rng::Rng,
}

#[cfg(test)]
impl RandomAgent {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            rng: super::rng::Rng::new(seed),
        }
    }
}

#[cfg(test)]
impl Agent for RandomAgent {
    fn decide(&mut self, state: &VisibleState) -> Action {
        let kind = self
            .rng
            .pick(&state.available_actions)
            .copied()
            .unwrap_or(ActionKind::Inventory);
        let target = match kind {
            ActionKind::Move => self
                .rng
                .pick(&state.room.exits)
                .map(|e| e.direction.clone()),
            ActionKind::Fight => {
                Some((self.rng.below(state.room.enemies.len() as u64) + 1).to_string())
            }
            ActionKind::UseItem => self.rng.pick(&state.player.inventory).map(|e| e.id.clone()),
            _ => None,
        };
        Action::new(kind, target.as_deref())
    }
}
