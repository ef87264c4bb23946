//! What lives in the dungeon: the player and their class, enemies, items, weapons, traps and
//! puzzles, with the numbers that define them. Rules that change them live in `rules`/`combat`.

use serde::{Deserialize, Serialize};

/// Starting hit points, the same for every class.
pub(crate) const BASE_HP: i32 = 100;
/// Starting action points: the run's whole budget.
pub(crate) const BASE_AP: i32 = 100;
const BASE_ATK: i32 = 8;
const BASE_DEF: i32 = 4;
const BASE_DEX: i32 = 5;
const BASE_INT: i32 = 5;
/// What a class adds to its one stat: small, so skill matters more than the pick.
pub(crate) const CLASS_BONUS: i32 = 3;
/// Critical-hit chance in percent, and the gambler's.
pub(crate) const BASE_CRIT: i32 = 5;
pub(crate) const GAMBLER_CRIT: i32 = 20;

/// The six classes; each adds one small edge to the shared base stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// +atk.
    Fighter,
    /// +def.
    Defender,
    /// +dex: hits, dodges, flees and disarms more often.
    Rogue,
    /// +int: stronger blows and better at puzzles.
    Mage,
    /// First strike: a sure half-strength shot at the first enemy on entering a guarded room.
    Ranger,
    /// Critical hits four times as often.
    Gambler,
}

impl Class {
    /// Every class, in the order the API lists them.
    pub const ALL: [Class; 6] = [
        Class::Fighter,
        Class::Defender,
        Class::Rogue,
        Class::Mage,
        Class::Ranger,
        Class::Gambler,
    ];

    /// The class's name in the API and in storage (`fighter`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Fighter => "fighter",
            Class::Defender => "defender",
            Class::Rogue => "rogue",
            Class::Mage => "mage",
            Class::Ranger => "ranger",
            Class::Gambler => "gambler",
        }
    }

    /// Parses a class name (case-insensitive).
    pub fn parse(name: &str) -> Option<Class> {
        Class::ALL
            .into_iter()
            .find(|class| class.as_str().eq_ignore_ascii_case(name.trim()))
    }

    /// One line for the skill file.
    pub(crate) fn perk(self) -> &'static str {
        match self {
            Class::Fighter => "+3 atk",
            Class::Defender => "+3 def",
            Class::Rogue => "+3 dex (hit, dodge, flee and disarm chances)",
            Class::Mage => "+3 int (damage and puzzle chances)",
            Class::Ranger => {
                "first strike: a sure half-strength shot on entering a room with enemies"
            }
            Class::Gambler => "20% critical hits instead of 5%",
        }
    }
}

/// Elemental affinity of enemies and weapons; a weapon deals +50% to an enemy weak to its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Element {
    None,
    Fire,
    Ice,
    Poison,
    Shadow,
    Holy,
}

impl Element {
    /// The element that hurts this one most, if any.
    pub(crate) fn weakness(self) -> Option<Element> {
        match self {
            Element::None => None,
            Element::Fire => Some(Element::Ice),
            Element::Ice => Some(Element::Fire),
            Element::Poison => Some(Element::Fire),
            Element::Shadow => Some(Element::Holy),
            Element::Holy => Some(Element::Shadow),
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Element::None => "none",
            Element::Fire => "fire",
            Element::Ice => "ice",
            Element::Poison => "poison",
            Element::Shadow => "shadow",
            Element::Holy => "holy",
        }
    }
}

/// A wielded weapon: adds to atk, and may carry an element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Weapon {
    pub name: String,
    pub atk: i32,
    pub element: Element,
}

/// What an item does when used (or, for treasure, when picked up).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub(crate) enum Effect {
    /// Restores this many HP (never above maxHp).
    Heal { amount: i32 },
    /// Restores this many AP (never above maxAp).
    RestoreAp { amount: i32 },
    /// Deals this much damage to every enemy in the room.
    Bomb { damage: i32 },
    /// Equips the weapon; the one in hand goes to the inventory.
    Equip { weapon: Weapon },
    /// Gold, counted into the score as soon as it is picked up.
    Treasure { value: i64 },
}

/// An item on the floor or in the inventory. `id` is what `use_item` takes as its target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Item {
    pub id: String,
    pub name: String,
    pub effect: Effect,
}

impl Item {
    pub(crate) fn new(id: &str, name: &str, effect: Effect) -> Self {
        Self {
            id: id.to_owned(),
            name: name.to_owned(),
            effect,
        }
    }

    pub(crate) fn health_potion() -> Self {
        Item::new(
            "health-potion",
            "Health Potion",
            Effect::Heal { amount: 35 },
        )
    }

    pub(crate) fn greater_potion() -> Self {
        Item::new(
            "greater-potion",
            "Greater Potion",
            Effect::Heal { amount: 60 },
        )
    }

    pub(crate) fn vigor_elixir() -> Self {
        Item::new(
            "vigor-elixir",
            "Vigor Elixir",
            Effect::RestoreAp { amount: 12 },
        )
    }

    pub(crate) fn fire_bomb() -> Self {
        Item::new("fire-bomb", "Fire Bomb", Effect::Bomb { damage: 20 })
    }

    pub(crate) fn weapon(id: &str, name: &str, atk: i32, element: Element) -> Self {
        Item::new(
            id,
            name,
            Effect::Equip {
                weapon: Weapon {
                    name: name.to_owned(),
                    atk,
                    element,
                },
            },
        )
    }

    pub(crate) fn treasure(name: &str, value: i64) -> Self {
        Item::new("treasure", name, Effect::Treasure { value })
    }

    /// What the item does, in words an agent can act on.
    pub(crate) fn describe(&self) -> String {
        match &self.effect {
            Effect::Heal { amount } => format!("heals {amount} HP"),
            Effect::RestoreAp { amount } => format!("restores {amount} AP"),
            Effect::Bomb { damage } => format!("deals {damage} damage to every enemy in the room"),
            Effect::Equip { weapon } => {
                format!(
                    "weapon: +{} atk, element {}",
                    weapon.atk,
                    weapon.element.as_str()
                )
            }
            Effect::Treasure { value } => format!("treasure worth {value} gold"),
        }
    }
}

/// A monster; `boss` marks the final one, whose defeat clears the dungeon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Enemy {
    pub name: String,
    pub hp: i32,
    pub max_hp: i32,
    pub atk: i32,
    pub def: i32,
    pub element: Element,
    pub level: i32,
    pub boss: bool,
}

impl Enemy {
    pub(crate) fn alive(&self) -> bool {
        self.hp > 0
    }

    /// Experience (and kill score) the enemy is worth.
    pub(crate) fn xp(&self) -> i32 {
        if self.boss { 150 } else { 10 * self.level }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TrapState {
    Armed,
    Disarmed,
}

/// A trap springs on whoever leaves the room while it is armed, and resets each time: only
/// `disarm` stops it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Trap {
    pub name: String,
    pub damage: i32,
    pub state: TrapState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PuzzleState {
    Unsolved,
    Solved,
    /// Too many failed attempts: the reward is lost.
    Sealed,
}

/// An optional puzzle guarding a reward; each failure burns a little HP and one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Puzzle {
    pub name: String,
    pub state: PuzzleState,
    pub attempts_left: i32,
    pub reward: Item,
}

/// XP needed to reach the next level from `level`.
pub(crate) fn xp_for_next(level: i32) -> i32 {
    40 * level
}

/// The adventurer. `ap` and `hp` are the two budgets; the rest are the stats the view shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Player {
    pub class: Class,
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
    pub weapon: Weapon,
    pub inventory: Vec<Item>,
}

impl Player {
    /// Base stats plus the class's modifier, a dagger and one health potion.
    pub(crate) fn new(class: Class) -> Self {
        let bonus = |wanted: Class| if class == wanted { CLASS_BONUS } else { 0 };
        Self {
            class,
            hp: BASE_HP,
            max_hp: BASE_HP,
            ap: BASE_AP,
            max_ap: BASE_AP,
            atk: BASE_ATK + bonus(Class::Fighter),
            def: BASE_DEF + bonus(Class::Defender),
            dex: BASE_DEX + bonus(Class::Rogue),
            int: BASE_INT + bonus(Class::Mage),
            level: 1,
            xp: 0,
            weapon: Weapon {
                name: "Dagger".to_owned(),
                atk: 2,
                element: Element::None,
            },
            inventory: vec![Item::health_potion()],
        }
    }

    pub(crate) fn crit_chance(&self) -> i32 {
        if self.class == Class::Gambler {
            GAMBLER_CRIT
        } else {
            BASE_CRIT
        }
    }

    pub(crate) fn xp_next(&self) -> i32 {
        xp_for_next(self.level)
    }

    /// Heals up to maxHp; returns the HP actually restored.
    pub(crate) fn heal(&mut self, amount: i32) -> i32 {
        let before = self.hp;
        self.hp = (self.hp + amount.max(0)).min(self.max_hp);
        self.hp - before
    }

    /// Takes damage down to 0; returns the HP actually lost.
    pub(crate) fn hurt(&mut self, amount: i32) -> i32 {
        let before = self.hp;
        self.hp = (self.hp - amount.max(0)).max(0);
        before - self.hp
    }

    /// Spends AP, never below 0.
    pub(crate) fn spend(&mut self, cost: i32) {
        self.ap = (self.ap - cost).max(0);
    }

    /// Adds XP and applies every level-up it earns; returns the levels reached.
    pub(crate) fn gain_xp(&mut self, xp: i32) -> Vec<i32> {
        let mut reached = Vec::new();
        self.xp += xp.max(0);
        while self.xp >= self.xp_next() {
            self.xp -= self.xp_next();
            self.level += 1;
            self.max_hp += 8;
            self.hp = (self.hp + 8).min(self.max_hp);
            self.atk += 2;
            self.def += 1;
            reached.push(self.level);
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_starts_from_the_same_base_with_one_modifier() {
        for class in Class::ALL {
            let p = Player::new(class);
            assert_eq!((p.hp, p.max_hp, p.ap, p.max_ap), (100, 100, 100, 100));
            let extra =
                (p.atk - BASE_ATK) + (p.def - BASE_DEF) + (p.dex - BASE_DEX) + (p.int - BASE_INT);
            let expected = match class {
                Class::Ranger | Class::Gambler => 0,
                _ => CLASS_BONUS,
            };
            assert_eq!(extra, expected, "{class:?}");
            assert_eq!(Class::parse(class.as_str()), Some(class));
        }
        assert_eq!(Player::new(Class::Fighter).atk, BASE_ATK + 3);
        assert_eq!(Player::new(Class::Defender).def, BASE_DEF + 3);
        assert_eq!(Player::new(Class::Rogue).dex, BASE_DEX + 3);
        assert_eq!(Player::new(Class::Mage).int, BASE_INT + 3);
        assert_eq!(Player::new(Class::Gambler).crit_chance(), GAMBLER_CRIT);
        assert_eq!(Player::new(Class::Ranger).crit_chance(), BASE_CRIT);
        assert_eq!(Class::parse("Wizard"), None);
    }

    #[test]
    fn heal_and_hurt_are_clamped() {
        let mut p = Player::new(Class::Fighter);
        assert_eq!(p.heal(50), 0);
        assert_eq!(p.hurt(30), 30);
        assert_eq!(p.heal(50), 30);
        assert_eq!(p.hurt(500), 100);
        assert_eq!(p.hp, 0);
        p.spend(150);
        assert_eq!(p.ap, 0);
    }

    #[test]
    fn xp_levels_up_and_carries_over() {
        let mut p = Player::new(Class::Mage);
        assert_eq!(p.gain_xp(39), Vec::<i32>::new());
        assert_eq!(p.gain_xp(1 + 80 + 5), vec![2, 3]);
        assert_eq!((p.level, p.xp, p.max_hp, p.atk), (3, 5, 116, BASE_ATK + 4));
        assert_eq!(p.xp_next(), 120);
    }

    #[test]
    fn elements_have_the_documented_weaknesses() {
        assert_eq!(Element::Fire.weakness(), Some(Element::Ice));
        assert_eq!(Element::Shadow.weakness(), Some(Element::Holy));
        assert_eq!(Element::None.weakness(), None);
    }
}
