//! What happened in a turn, for the reply and the watch stream (`run:turn` carries these, and
//! `run:ended` mirrors [`GameEvent::RunEnded`]). Serialized as `{"type": "snake_case", ...camelCase}`.

use serde::{Deserialize, Serialize};

use super::run::RunStatus;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum GameEvent {
    RoomEntered {
        room_id: String,
        name: String,
        floor: u32,
        first_visit: bool,
    },
    FloorReached {
        floor: u32,
    },
    /// The ranger's free shot on entering a guarded room.
    FirstStrike {
        enemy: String,
        damage: i32,
        enemy_hp: i32,
    },
    /// One round: the player's blow at `enemy`, then every living enemy's answer.
    CombatRound {
        enemy: String,
        hit: bool,
        crit: bool,
        damage_dealt: i32,
        enemy_hp: i32,
        damage_taken: i32,
    },
    EnemyDefeated {
        enemy: String,
        xp: i32,
        boss: bool,
    },
    LevelUp {
        level: i32,
    },
    ItemFound {
        item: String,
        name: String,
        effect: String,
    },
    TreasureFound {
        name: String,
        value: i64,
    },
    ItemUsed {
        item: String,
        effect: String,
    },
    WeaponEquipped {
        weapon: String,
        atk: i32,
    },
    TrapSprung {
        trap: String,
        damage: i32,
    },
    TrapDisarmed {
        trap: String,
    },
    PuzzleSolved {
        puzzle: String,
    },
    PuzzleFailed {
        puzzle: String,
        damage: i32,
        attempts_left: i32,
    },
    Fled {
        room_id: String,
    },
    /// The escape failed and every enemy got a free blow.
    FleeFailed {
        damage_taken: i32,
    },
    /// Enemies struck first: on entering their room, or while the player used an item or examined.
    Ambushed {
        damage_taken: i32,
    },
    Rested {
        healed: i32,
    },
    Examined {
        room_id: String,
        found: Vec<String>,
        notes: Vec<String>,
    },
    Inventory {
        items: Vec<String>,
    },
    /// An action that was not available: 1 AP charged, the turn not consumed.
    IllegalAction {
        action: String,
        reason: String,
        ap_charged: i32,
    },
    RunEnded {
        status: RunStatus,
        score: i64,
    },
}
