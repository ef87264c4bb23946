//! What happened in a turn, for the reply and the watch stream (`run:turn` carries these, and
//! `run:ended` mirrors [`GameEvent::RunEnded`]). Serialized as `{"type": "snake_case", ...camelCase}`.

use serde::{Deserialize, Serialize};

use super::run::RunStatus;

/// One thing that happened in a turn, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum GameEvent {
    /// The player walked (or fled) into a room.
    RoomEntered {
        /// The room's id.
        room_id: String,
        /// The room's name.
        name: String,
        /// Its floor, 1-based.
        floor: u32,
        /// Whether the room had not been visited before.
        first_visit: bool,
    },
    /// A floor deeper than any before was reached.
    FloorReached {
        /// The floor, 1-based.
        floor: u32,
    },
    /// The ranger's free shot on entering a guarded room.
    FirstStrike {
        /// The enemy shot at.
        enemy: String,
        /// Damage dealt.
        damage: i32,
        /// The enemy's HP after the shot.
        enemy_hp: i32,
    },
    /// One round: the player's blow at `enemy`, then every living enemy's answer.
    CombatRound {
        /// The enemy the player struck at.
        enemy: String,
        /// Whether the blow landed.
        hit: bool,
        /// Whether it was a critical hit.
        crit: bool,
        /// Damage the blow dealt.
        damage_dealt: i32,
        /// The enemy's HP after it.
        enemy_hp: i32,
        /// Damage the living enemies dealt back, together.
        damage_taken: i32,
    },
    /// An enemy's HP reached 0.
    EnemyDefeated {
        /// The enemy.
        enemy: String,
        /// XP gained.
        xp: i32,
        /// Whether it was the final boss.
        boss: bool,
    },
    /// The player reached a new level.
    LevelUp {
        /// The new level.
        level: i32,
    },
    /// An item went into the inventory.
    ItemFound {
        /// The item's id.
        item: String,
        /// Its name.
        name: String,
        /// What it does, in words.
        effect: String,
    },
    /// Gold was found (it adds to the score).
    TreasureFound {
        /// The treasure's name.
        name: String,
        /// Its value in points.
        value: i64,
    },
    /// An item was used up (or a weapon equipped).
    ItemUsed {
        /// The item's id.
        item: String,
        /// What it did, in words.
        effect: String,
    },
    /// A better weapon is now in hand.
    WeaponEquipped {
        /// The weapon's name.
        weapon: String,
        /// Its attack bonus.
        atk: i32,
    },
    /// A trap went off.
    TrapSprung {
        /// The trap's name.
        trap: String,
        /// Damage taken.
        damage: i32,
    },
    /// A trap was disarmed.
    TrapDisarmed {
        /// The trap's name.
        trap: String,
    },
    /// A puzzle was solved (its reward follows as other events).
    PuzzleSolved {
        /// The puzzle's name.
        puzzle: String,
    },
    /// An attempt at a puzzle failed.
    PuzzleFailed {
        /// The puzzle's name.
        puzzle: String,
        /// Damage taken.
        damage: i32,
        /// Attempts left before the puzzle seals.
        attempts_left: i32,
    },
    /// The player escaped to the room they came from.
    Fled {
        /// The room fled to.
        room_id: String,
    },
    /// The escape failed and every enemy got a free blow.
    FleeFailed {
        /// Damage taken from those blows.
        damage_taken: i32,
    },
    /// Enemies struck first: on entering their room, or while the player used an item or examined.
    Ambushed {
        /// Damage taken.
        damage_taken: i32,
    },
    /// The player rested.
    Rested {
        /// HP restored.
        healed: i32,
    },
    /// The room was searched.
    Examined {
        /// The room's id.
        room_id: String,
        /// Hidden items revealed.
        found: Vec<String>,
        /// What was learnt (enemy weaknesses, …).
        notes: Vec<String>,
    },
    /// The inventory, as listed by the free `inventory` action.
    Inventory {
        /// One line per item.
        items: Vec<String>,
    },
    /// An action that was not available: 1 AP charged, the turn not consumed.
    IllegalAction {
        /// The action as sent.
        action: String,
        /// Why it was not available.
        reason: String,
        /// AP charged for it ([`ILLEGAL_ACTION_AP`](crate::ILLEGAL_ACTION_AP)).
        ap_charged: i32,
    },
    /// The run is over.
    RunEnded {
        /// How it ended.
        status: RunStatus,
        /// The final score.
        score: i64,
    },
}
