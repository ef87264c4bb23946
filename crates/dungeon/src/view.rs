//! The visible state: everything an agent (or a spectator) may know after a turn — room, player,
//! available actions, score, turn number, status — so an agent never has to remember anything
//! between turns.

use serde::{Deserialize, Serialize};

use super::entities::{Element, Weapon};
use super::entities::{PuzzleState, TrapState};
use super::rules::ActionKind;
use super::run::{Run, RunStatus};

/// What an agent sees after a turn (the API's run state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VisibleState {
    /// The day's dungeon id.
    pub dungeon_id: String,
    /// The day's theme.
    pub theme: String,
    /// The room the player is in.
    pub room: RoomView,
    /// The player's stats, weapon and inventory.
    pub player: PlayerView,
    /// The actions legal now.
    pub available_actions: Vec<ActionKind>,
    /// The score so far.
    pub score: i64,
    /// Legal turns played so far.
    pub turn_number: u64,
    /// Where the run stands.
    pub status: RunStatus,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoomView {
    pub name: String,
    pub floor: u32,
    pub room_id: String,
    pub description: String,
    pub exits: Vec<ExitView>,
    /// Living enemies only, in the order `fight` positions count them.
    pub(crate) enemies: Vec<EnemyView>,
    /// Items lying here, guarded by the enemies (they are picked up once none is left).
    pub(crate) items: Vec<ItemView>,
    pub(crate) objects: Vec<ObjectView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitView {
    pub direction: String,
    pub room_id: String,
    pub visited: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EnemyView {
    pub name: String,
    pub hp: i32,
    pub atk: i32,
    pub def: i32,
    pub element: Element,
    pub level: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemView {
    pub id: String,
    pub name: String,
    pub effect: String,
}

/// A trap (`armed|disarmed`), a puzzle (`unsolved|solved|sealed`) or the stairs
/// (`guarded|open`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectView {
    pub kind: String,
    pub name: String,
    pub state: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InventoryEntry {
    pub id: String,
    pub name: String,
    pub effect: String,
    pub quantity: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlayerView {
    pub class: String,
    pub hp: i32,
    pub max_hp: i32,
    pub ap: i32,
    pub max_ap: i32,
    pub atk: i32,
    pub def: i32,
    pub dex: i32,
    pub int: i32,
    pub level: i32,
    pub xp: i32,
    pub xp_next: i32,
    pub(crate) weapon: Weapon,
    /// Grouped by item id, in the order first picked up.
    pub(crate) inventory: Vec<InventoryEntry>,
}

fn trap_state(state: TrapState) -> &'static str {
    match state {
        TrapState::Armed => "armed",
        TrapState::Disarmed => "disarmed",
    }
}

fn puzzle_state(state: PuzzleState) -> &'static str {
    match state {
        PuzzleState::Unsolved => "unsolved",
        PuzzleState::Solved => "solved",
        PuzzleState::Sealed => "sealed",
    }
}

impl Run {
    /// The state as the agent sees it now.
    pub fn view(&self) -> VisibleState {
        let room = &self.rooms[self.room];
        let guarded = self.enemies_alive();
        let mut objects = Vec::new();
        if let Some(trap) = &room.trap {
            objects.push(ObjectView {
                kind: "trap".to_owned(),
                name: trap.name.clone(),
                state: trap_state(trap.state).to_owned(),
            });
        }
        if let Some(puzzle) = &room.puzzle {
            objects.push(ObjectView {
                kind: "puzzle".to_owned(),
                name: puzzle.name.clone(),
                state: puzzle_state(puzzle.state).to_owned(),
            });
        }
        if room.stairs {
            objects.push(ObjectView {
                kind: "stairs".to_owned(),
                name: "Stairs down".to_owned(),
                state: if guarded { "guarded" } else { "open" }.to_owned(),
            });
        }
        let mut inventory: Vec<InventoryEntry> = Vec::new();
        for item in &self.player.inventory {
            match inventory.iter_mut().find(|entry| entry.id == item.id) {
                Some(entry) => entry.quantity += 1,
                None => inventory.push(InventoryEntry {
                    id: item.id.clone(),
                    name: item.name.clone(),
                    effect: item.describe(),
                    quantity: 1,
                }),
            }
        }
        let p = &self.player;
        VisibleState {
            dungeon_id: self.dungeon_id.clone(),
            theme: self.theme.clone(),
            room: RoomView {
                name: room.name.clone(),
                floor: room.floor,
                room_id: room.id.clone(),
                description: room.description.clone(),
                exits: room
                    .exits
                    .iter()
                    .map(|exit| ExitView {
                        direction: exit.direction.clone(),
                        room_id: self.rooms[exit.room].id.clone(),
                        visited: self.visited[exit.room],
                    })
                    .collect(),
                enemies: room
                    .enemies
                    .iter()
                    .filter(|e| e.alive())
                    .map(|e| EnemyView {
                        name: e.name.clone(),
                        hp: e.hp,
                        atk: e.atk,
                        def: e.def,
                        element: e.element,
                        level: e.level,
                    })
                    .collect(),
                items: room
                    .items
                    .iter()
                    .map(|item| ItemView {
                        id: item.id.clone(),
                        name: item.name.clone(),
                        effect: item.describe(),
                    })
                    .collect(),
                objects,
            },
            player: PlayerView {
                class: p.class.as_str().to_owned(),
                hp: p.hp,
                max_hp: p.max_hp,
                ap: p.ap,
                max_ap: p.max_ap,
                atk: p.atk,
                def: p.def,
                dex: p.dex,
                int: p.int,
                level: p.level,
                xp: p.xp,
                xp_next: p.xp_next(),
                weapon: p.weapon.clone(),
                inventory,
            },
            available_actions: self.legal_actions(),
            score: self.score(),
            turn_number: self.turn_number,
            status: self.status,
        }
    }
}
