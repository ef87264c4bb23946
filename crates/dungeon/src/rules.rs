//! The actions, their AP costs and when each is legal, and what each does to a [`Run`].
//!
//! Targets are matched case-insensitively: `move` takes an exit's direction or room id, `fight`
//! an enemy's name or 1-based position (default: the first), `use_item` an item id or name.

use serde::{Deserialize, Serialize};

use super::entities::{Effect, PuzzleState, TrapState};
use super::run::Run;

/// Every action the game knows (the skill file says what each does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Go through an exit.
    Move,
    /// One combat round.
    Fight,
    /// Run back to the previous room.
    Flee,
    /// Use an inventory item.
    UseItem,
    /// Search the room once.
    Examine,
    /// Attempt the room's puzzle.
    Solve,
    /// Disarm the room's trap.
    Disarm,
    /// Recover HP, once per room.
    Rest,
    /// List the items (free).
    Inventory,
}

/// HP restored by `rest`.
pub(super) const REST_HEAL: i32 = 25;

impl ActionKind {
    pub(crate) const ALL: [ActionKind; 9] = [
        ActionKind::Move,
        ActionKind::Fight,
        ActionKind::Flee,
        ActionKind::UseItem,
        ActionKind::Examine,
        ActionKind::Solve,
        ActionKind::Disarm,
        ActionKind::Rest,
        ActionKind::Inventory,
    ];

    /// AP cost; `fight` is per round.
    pub(crate) fn cost(self) -> i32 {
        match self {
            ActionKind::Move | ActionKind::UseItem | ActionKind::Examine => 1,
            ActionKind::Fight | ActionKind::Solve | ActionKind::Disarm => 2,
            ActionKind::Flee | ActionKind::Rest => 3,
            ActionKind::Inventory => 0,
        }
    }

    /// The action's name as agents send it (`use_item`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Move => "move",
            ActionKind::Fight => "fight",
            ActionKind::Flee => "flee",
            ActionKind::UseItem => "use_item",
            ActionKind::Examine => "examine",
            ActionKind::Solve => "solve",
            ActionKind::Disarm => "disarm",
            ActionKind::Rest => "rest",
            ActionKind::Inventory => "inventory",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<ActionKind> {
        ActionKind::ALL
            .into_iter()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// What the action does, for the skill file.
    pub(crate) fn summary(self) -> &'static str {
        match self {
            ActionKind::Move => {
                "go through an exit (target: direction such as `north`, `down` for the stairs, or a roomId); not while enemies live in the room; leaving a room with an armed trap springs it"
            }
            ActionKind::Fight => {
                "one combat round against an enemy (target: name or 1-based position; default the first); every living enemy strikes back"
            }
            ActionKind::Flee => {
                "run back to the room you came from (chance grows with dex); on failure every enemy strikes"
            }
            ActionKind::UseItem => {
                "use an inventory item (target: item id or name): potions heal, elixirs restore AP, bombs hit every enemy, weapons are equipped"
            }
            ActionKind::Examine => {
                "search the room once: reveals hidden items and enemy weaknesses"
            }
            ActionKind::Solve => {
                "attempt the room's puzzle (chance grows with int); success gives its reward and XP, failure hurts; 3 failures seal it"
            }
            ActionKind::Disarm => {
                "disarm the room's armed trap (chance grows with dex); failure springs it"
            }
            ActionKind::Rest => "recover 25 HP; once per room, not while enemies live",
            ActionKind::Inventory => "list your items; free",
        }
    }
}

/// One action as an agent sends it (and as it is stored for replay): names are kept verbatim
/// so that even an unknown action replays as the same refusal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// The action's name, as sent.
    pub action: String,
    /// What it is aimed at, where it needs a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Action {
    /// The action `kind` aimed at `target`.
    pub fn new(kind: ActionKind, target: Option<&str>) -> Action {
        Action {
            action: kind.as_str().to_owned(),
            target: target.map(str::to_owned),
        }
    }
}

fn matches(target: &str, candidate: &str) -> bool {
    target.trim().eq_ignore_ascii_case(candidate)
}

impl Run {
    pub(super) fn enemies_alive(&self) -> bool {
        self.rooms[self.room].enemies.iter().any(|e| e.alive())
    }

    /// The actions available now, in a fixed order; never empty while the run is active
    /// (`inventory` is free), empty once it is over.
    pub(crate) fn legal_actions(&self) -> Vec<ActionKind> {
        if self.status.is_over() {
            return Vec::new();
        }
        let room = &self.rooms[self.room];
        let fighting = self.enemies_alive();
        let player = &self.player;
        ActionKind::ALL
            .into_iter()
            .filter(|kind| kind.cost() <= player.ap)
            .filter(|kind| match kind {
                ActionKind::Move => !fighting && !room.exits.is_empty(),
                ActionKind::Fight => fighting,
                ActionKind::Flee => fighting && self.came_from.is_some(),
                ActionKind::UseItem => !player.inventory.is_empty(),
                ActionKind::Examine => !self.examined[self.room],
                ActionKind::Solve => {
                    !fighting
                        && room
                            .puzzle
                            .as_ref()
                            .is_some_and(|p| p.state == PuzzleState::Unsolved)
                }
                ActionKind::Disarm => {
                    !fighting
                        && room
                            .trap
                            .as_ref()
                            .is_some_and(|t| t.state == TrapState::Armed)
                }
                ActionKind::Rest => {
                    !fighting && player.hp < player.max_hp && !self.rested[self.room]
                }
                ActionKind::Inventory => true,
            })
            .collect()
    }

    /// The action's kind if it is legal now with its target, else why not.
    pub(super) fn check(&self, action: &Action) -> Result<ActionKind, String> {
        let legal = self.legal_actions();
        let Some(kind) = ActionKind::parse(&action.action) else {
            return Err(format!("unknown action `{}`", action.action));
        };
        if !legal.contains(&kind) {
            return Err(format!("`{}` is not available here", kind.as_str()));
        }
        let target = action.target.as_deref();
        match kind {
            ActionKind::Move => self.exit_index(target).map(|_| kind),
            ActionKind::Fight => self.enemy_index(target).map(|_| kind),
            ActionKind::UseItem => self.item_index(target).map(|_| kind),
            _ => Ok(kind),
        }
    }

    pub(super) fn exit_index(&self, target: Option<&str>) -> Result<usize, String> {
        let exits = &self.rooms[self.room].exits;
        let names: Vec<&str> = exits.iter().map(|e| e.direction.as_str()).collect();
        let Some(target) = target else {
            return Err(format!("move needs a target, one of: {}", names.join(", ")));
        };
        exits
            .iter()
            .position(|e| matches(target, &e.direction) || matches(target, &self.rooms[e.room].id))
            .ok_or_else(|| format!("no exit `{target}`; exits: {}", names.join(", ")))
    }

    pub(super) fn enemy_index(&self, target: Option<&str>) -> Result<usize, String> {
        let living: Vec<usize> = (0..self.rooms[self.room].enemies.len())
            .filter(|&i| self.rooms[self.room].enemies[i].alive())
            .collect();
        let Some(target) = target.map(str::trim).filter(|t| !t.is_empty()) else {
            return living
                .first()
                .copied()
                .ok_or_else(|| "no enemy here".to_owned());
        };
        if let Ok(position) = target.parse::<usize>() {
            return position
                .checked_sub(1)
                .and_then(|p| living.get(p).copied())
                .ok_or_else(|| format!("no enemy at position {position}"));
        }
        living
            .into_iter()
            .find(|&i| matches(target, &self.rooms[self.room].enemies[i].name))
            .ok_or_else(|| format!("no living enemy named `{target}`"))
    }

    pub(super) fn item_index(&self, target: Option<&str>) -> Result<usize, String> {
        let inventory = &self.player.inventory;
        let ids: Vec<&str> = inventory.iter().map(|i| i.id.as_str()).collect();
        let Some(target) = target else {
            return Err(format!(
                "use_item needs a target, one of: {}",
                ids.join(", ")
            ));
        };
        let index = inventory
            .iter()
            .position(|i| matches(target, &i.id) || matches(target, &i.name))
            .ok_or_else(|| format!("no item `{target}`; inventory: {}", ids.join(", ")))?;
        if matches!(inventory[index].effect, Effect::Bomb { .. }) && !self.enemies_alive() {
            return Err("there is no enemy to throw it at".to_owned());
        }
        Ok(index)
    }
}
