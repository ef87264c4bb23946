//! Combat arithmetic: to-hit, damage, criticals and elemental weakness. Pure functions over the
//! stats, drawing only from the turn's seeded [`Rng`].

use super::entities::{Enemy, Player};
use super::rng::Rng;

/// The outcome of one blow by the player.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Strike {
    pub hit: bool,
    pub crit: bool,
    pub damage: i32,
}

/// Player's chance to hit, in percent.
pub(super) fn player_hit_chance(player: &Player, enemy: &Enemy) -> i32 {
    (80 + 2 * player.dex - 2 * enemy.level).clamp(50, 95)
}

/// An enemy's chance to hit the player, in percent: dexterity dodges.
pub(super) fn enemy_hit_chance(player: &Player) -> i32 {
    (75 - 2 * player.dex).clamp(30, 90)
}

/// The player's damage before variance: atk + weapon + half int − enemy def, at least 1;
/// +50% when the weapon's element is the enemy's weakness.
pub(super) fn base_damage(player: &Player, enemy: &Enemy) -> i32 {
    let raw = (player.atk + player.weapon.atk + player.int / 2 - enemy.def).max(1);
    if enemy.element.weakness() == Some(player.weapon.element) {
        raw + raw / 2
    } else {
        raw
    }
}

/// One blow at `enemy` (applied to it).
pub(super) fn player_strike(player: &Player, enemy: &mut Enemy, rng: &mut Rng) -> Strike {
    let hit = rng.percent(player_hit_chance(player, enemy));
    if !hit {
        return Strike {
            hit,
            crit: false,
            damage: 0,
        };
    }
    let crit = rng.percent(player.crit_chance());
    let mut damage = base_damage(player, enemy) + rng.range(0, 3);
    if crit {
        damage *= 2;
    }
    enemy.hp = (enemy.hp - damage).max(0);
    Strike { hit, crit, damage }
}

/// The ranger's shot on entering a guarded room: it always hits, for half a normal blow (never
/// critical), so it softens the first enemy without replacing a round of combat.
pub(super) fn first_strike(player: &Player, enemy: &mut Enemy, rng: &mut Rng) -> i32 {
    let damage = ((base_damage(player, enemy) + rng.range(0, 3)) / 2).max(1);
    enemy.hp = (enemy.hp - damage).max(0);
    damage
}

/// One blow by `enemy` at the player (applied); returns the HP lost (0 on a miss).
pub(super) fn enemy_strike(enemy: &Enemy, player: &mut Player, rng: &mut Rng) -> i32 {
    if !rng.percent(enemy_hit_chance(player)) {
        return 0;
    }
    let damage = (enemy.atk - player.def).max(1) + rng.range(0, 2);
    player.hurt(damage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entities::{Class, Element};

    fn dummy(element: Element) -> Enemy {
        Enemy {
            name: "Dummy".into(),
            hp: 1000,
            max_hp: 1000,
            atk: 10,
            def: 3,
            element,
            level: 1,
            boss: false,
        }
    }

    #[test]
    fn damage_follows_stats_weakness_and_class() {
        let fighter = Player::new(Class::Fighter);
        let defender = Player::new(Class::Defender);
        // fighter: atk 11 + dagger 2 + int 5/2 − def 3 = 12
        assert_eq!(base_damage(&fighter, &dummy(Element::None)), 12);
        assert_eq!(base_damage(&defender, &dummy(Element::None)), 9);
        let mut holy = Player::new(Class::Fighter);
        holy.weapon.element = Element::Holy;
        assert_eq!(base_damage(&holy, &dummy(Element::Shadow)), 18);
        let mut weak = Player::new(Class::Mage);
        weak.atk = 0;
        weak.weapon.atk = 0;
        weak.int = 0;
        assert_eq!(
            base_damage(&weak, &dummy(Element::None)),
            1,
            "never below 1"
        );
        let rogue = Player::new(Class::Rogue);
        assert!(enemy_hit_chance(&rogue) < enemy_hit_chance(&fighter));
        assert!(
            player_hit_chance(&rogue, &dummy(Element::None))
                > player_hit_chance(&fighter, &dummy(Element::None))
        );
    }

    #[test]
    fn strikes_apply_their_damage_within_bounds() {
        let player = Player::new(Class::Ranger);
        let mut rng = Rng::new(1);
        let (mut hits, mut misses) = (0, 0);
        for _ in 0..200 {
            let mut enemy = dummy(Element::None);
            let s = player_strike(&player, &mut enemy, &mut rng);
            assert_eq!(enemy.hp, 1000 - s.damage);
            let base = base_damage(&player, &enemy);
            let (lo, hi) = match (s.hit, s.crit) {
                (false, _) => (0, 0),
                (true, false) => (base, base + 3),
                (true, true) => (2 * base, 2 * (base + 3)),
            };
            assert!((lo..=hi).contains(&s.damage));
            if s.hit {
                hits += 1
            } else {
                misses += 1
            }
            let mut enemy = dummy(Element::None);
            let shot = first_strike(&player, &mut enemy, &mut rng);
            assert!((base / 2..=(base + 3) / 2).contains(&shot));
            assert_eq!(enemy.hp, 1000 - shot);
        }
        assert!(hits > misses && misses > 0);
    }

    #[test]
    fn gamblers_crit_more_often() {
        let count = |class| {
            let player = Player::new(class);
            let mut rng = Rng::new(5);
            (0..2000)
                .filter(|_| player_strike(&player, &mut dummy(Element::None), &mut rng).crit)
                .count()
        };
        assert!(count(Class::Gambler) > 2 * count(Class::Fighter));
    }

    #[test]
    fn enemy_blows_hurt_at_least_one_and_respect_defence() {
        let mut rng = Rng::new(9);
        let enemy = dummy(Element::None);
        let mut player = Player::new(Class::Defender);
        let mut hits = 0;
        for _ in 0..50 {
            player.hp = 100;
            let lost = enemy_strike(&enemy, &mut player, &mut rng);
            if lost > 0 {
                hits += 1;
                assert!((3..=5).contains(&lost), "10 − def 7 = 3, plus 0..=2");
            }
        }
        assert!(hits > 0);
    }
}
