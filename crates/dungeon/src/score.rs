//! Scoring: depth, kills, treasure and clearing. The score is always recomputed from
//! the tally, whose counters only grow, so it never goes down and always matches the run.

use serde::{Deserialize, Serialize};

pub(crate) const POINTS_PER_FLOOR: i64 = 250;
pub(crate) const POINTS_PER_ROOM: i64 = 10;
pub(crate) const POINTS_PER_KILL_XP: i64 = 5;
pub(crate) const CLEAR_BONUS: i64 = 1000;
pub(crate) const CLEAR_POINTS_PER_AP: i64 = 5;
pub(crate) const CLEAR_POINTS_PER_HP: i64 = 2;

/// The counters a score is made of.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// The deepest floor reached, 1-based.
    pub deepest_floor: u32,
    /// Distinct rooms entered.
    pub rooms_visited: u32,
    /// Enemies defeated.
    pub kills: u32,
    /// Sum of the defeated enemies' XP (their level × 10, the boss 150).
    pub kill_xp: i64,
    /// Gold found.
    pub treasure: i64,
    /// AP and HP left when the boss fell; `None` until then.
    pub cleared_with: Option<(i32, i32)>,
}

impl Tally {
    /// The score these counters are worth.
    pub fn score(&self) -> i64 {
        let depth = POINTS_PER_FLOOR * i64::from(self.deepest_floor.saturating_sub(1))
            + POINTS_PER_ROOM * i64::from(self.rooms_visited);
        let kills = POINTS_PER_KILL_XP * self.kill_xp;
        let clearing = self.cleared_with.map_or(0, |(ap, hp)| {
            CLEAR_BONUS + CLEAR_POINTS_PER_AP * i64::from(ap) + CLEAR_POINTS_PER_HP * i64::from(hp)
        });
        depth + kills + self.treasure + clearing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_adds_depth_kills_treasure_and_clearing() {
        let mut t = Tally {
            deepest_floor: 1,
            rooms_visited: 1,
            ..Tally::default()
        };
        assert_eq!(t.score(), 10);
        t.deepest_floor = 3;
        t.rooms_visited = 12;
        t.kill_xp = 60;
        t.treasure = 45;
        assert_eq!(t.score(), 500 + 120 + 300 + 45);
        t.cleared_with = Some((10, 20));
        assert_eq!(t.score(), 500 + 120 + 300 + 45 + 1000 + 50 + 40);
    }
}
