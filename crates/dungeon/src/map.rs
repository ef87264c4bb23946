//! Dungeon generation: one map a day from the date's seed, 4 floors of 8 rooms on a 3×3 grid,
//! filled with enemies, traps, puzzles, items, a guardian on every stair room and the final boss.
//! Every entrant of a day gets the same map; a run keeps its own mutable copy.

use serde::{Deserialize, Serialize};

use super::entities::{Element, Enemy, Item, Puzzle, PuzzleState, Trap, TrapState};
use super::rng::{Rng, mix, seed_from_str};
use super::theme::{THEMES, Theme, theme_for_day};

/// Floors of every dungeon.
pub const FLOORS: usize = 4;
/// Rooms on each floor.
pub const ROOMS_PER_FLOOR: usize = 8;
/// The stairs are taken with `move` to this exit name.
pub(crate) const DOWN: &str = "down";
const GRID: usize = 3;

/// A way out of a room. `room` is an index into [`DungeonMap::rooms`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Exit {
    pub direction: String,
    pub room: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Room {
    /// `f{floor}r{n}`, n = 1 at the floor's entrance, 8 at its stair (or boss) room.
    pub id: String,
    pub name: String,
    pub description: String,
    pub floor: u32,
    pub exits: Vec<Exit>,
    pub enemies: Vec<Enemy>,
    /// Items in plain sight; picked up as soon as no enemy guards them.
    pub items: Vec<Item>,
    /// Items revealed only by `examine`.
    pub hidden: Vec<Item>,
    pub trap: Option<Trap>,
    pub puzzle: Option<Puzzle>,
    pub stairs: bool,
}

impl Room {
    /// A room with nothing in it and no way out yet: generation (and the tests' hand-made maps)
    /// fill it in.
    pub(crate) fn empty(id: String, name: &str, floor: u32) -> Room {
        Room {
            id,
            name: name.to_owned(),
            description: String::new(),
            floor,
            exits: Vec::new(),
            enemies: Vec::new(),
            items: Vec::new(),
            hidden: Vec::new(),
            trap: None,
            puzzle: None,
            stairs: false,
        }
    }
}

/// One day's dungeon. `rooms` is flat: floor `f` (1-based) holds indices `(f-1)*8 .. f*8`,
/// the entrance first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DungeonMap {
    /// The day's id (`YYYY-MM-DD`).
    pub id: String,
    /// The seed the map was generated from (date and deployment salt).
    pub seed: u64,
    /// The theme's name.
    pub theme: String,
    pub(crate) rooms: Vec<Room>,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl DungeonMap {
    /// The dungeon of a UTC date. `salt` is a per-deployment secret so tomorrow's map cannot be
    /// computed in advance from the open-source code; the theme rotates by day regardless.
    pub fn for_date(year: i32, month: u32, day: u32, salt: &str) -> DungeonMap {
        let days = days_from_civil(year, month, day);
        let seed = mix(seed_from_str(salt) ^ mix(days as u64));
        let id = format!("{year:04}-{month:02}-{day:02}");
        DungeonMap::generate(&id, seed, theme_for_day(days))
    }

    /// Generates a map from a seed; the same inputs always give the same map.
    pub(crate) fn generate(id: &str, seed: u64, theme_index: usize) -> DungeonMap {
        let theme = &THEMES[theme_index % THEMES.len()];
        let mut rng = Rng::new(seed);
        let mut rooms = Vec::with_capacity(FLOORS * ROOMS_PER_FLOOR);
        for floor in 1..=FLOORS as u32 {
            rooms.extend(generate_floor(&mut rng, theme, floor));
        }
        for floor in 1..FLOORS as u32 {
            let stairs = DungeonMap::entrance(floor) + ROOMS_PER_FLOOR - 1;
            rooms[stairs].exits.push(Exit {
                direction: DOWN.to_owned(),
                room: DungeonMap::entrance(floor + 1),
            });
        }
        DungeonMap {
            id: id.to_owned(),
            seed,
            theme: theme.name.to_owned(),
            rooms,
        }
    }

    /// Index of a floor's entrance room (floor is 1-based).
    pub(crate) fn entrance(floor: u32) -> usize {
        (floor.saturating_sub(1) as usize) * ROOMS_PER_FLOOR
    }
}

fn neighbours(cell: usize) -> Vec<(usize, &'static str)> {
    let (x, y) = (cell % GRID, cell / GRID);
    let mut out = Vec::with_capacity(4);
    if y > 0 {
        out.push((cell - GRID, "north"));
    }
    if y + 1 < GRID {
        out.push((cell + GRID, "south"));
    }
    if x > 0 {
        out.push((cell - 1, "west"));
    }
    if x + 1 < GRID {
        out.push((cell + 1, "east"));
    }
    out
}

fn opposite(direction: &str) -> &'static str {
    match direction {
        "north" => "south",
        "south" => "north",
        "east" => "west",
        _ => "east",
    }
}

/// Lays out 8 of the 9 grid cells as a random spanning tree (plus maybe one loop), numbers the
/// rooms by distance from the entrance so the stair room is the farthest, then fills them.
fn generate_floor(rng: &mut Rng, theme: &Theme, floor: u32) -> Vec<Room> {
    let start = rng.below((GRID * GRID) as u64) as usize;
    let mut in_tree = vec![start];
    let mut edges: Vec<(usize, usize, &'static str)> = Vec::new();
    while in_tree.len() < ROOMS_PER_FLOOR {
        let from = in_tree[rng.below(in_tree.len() as u64) as usize];
        let free: Vec<_> = neighbours(from)
            .into_iter()
            .filter(|(cell, _)| !in_tree.contains(cell))
            .collect();
        if let Some(&(to, direction)) = rng.pick(&free) {
            in_tree.push(to);
            edges.push((from, to, direction));
        }
    }
    if rng.percent(50) {
        let mut loops: Vec<(usize, usize, &'static str)> = Vec::new();
        for &a in &in_tree {
            for (b, direction) in neighbours(a) {
                let known = edges
                    .iter()
                    .any(|&(x, y, _)| (x == a && y == b) || (x == b && y == a));
                if a < b && in_tree.contains(&b) && !known {
                    loops.push((a, b, direction));
                }
            }
        }
        if let Some(&edge) = rng.pick(&loops) {
            edges.push(edge);
        }
    }

    // Breadth-first distances from the entrance; ties broken by cell so the order is stable.
    let mut distance = [usize::MAX; GRID * GRID];
    distance[start] = 0;
    let mut queue = Vec::with_capacity(GRID * GRID);
    queue.push(start);
    let mut head = 0;
    while head < queue.len() {
        let cell = queue[head];
        head += 1;
        for &(a, b, _) in &edges {
            let next = if a == cell {
                b
            } else if b == cell {
                a
            } else {
                continue;
            };
            if distance[next] == usize::MAX {
                distance[next] = distance[cell] + 1;
                queue.push(next);
            }
        }
    }
    let mut order = in_tree.clone();
    order.sort_by_key(|&cell| (distance[cell], cell));
    let base = DungeonMap::entrance(floor);
    let index_of = |cell: usize| base + order.iter().position(|&c| c == cell).unwrap_or(0);

    let mut names: Vec<&str> = theme.rooms.to_vec();
    rng.shuffle(&mut names);
    let mut rooms: Vec<Room> = order
        .iter()
        .enumerate()
        .map(|(i, _)| Room::empty(format!("f{floor}r{}", i + 1), names[i], floor))
        .collect();
    for &(a, b, direction) in &edges {
        let (ia, ib) = (index_of(a), index_of(b));
        rooms[ia - base].exits.push(Exit {
            direction: direction.to_owned(),
            room: ib,
        });
        rooms[ib - base].exits.push(Exit {
            direction: opposite(direction).to_owned(),
            room: ia,
        });
    }
    for room in &mut rooms {
        room.exits.sort_by(|x, y| x.direction.cmp(&y.direction));
    }
    for (i, room) in rooms.iter_mut().enumerate() {
        fill_room(rng, theme, floor, i, room);
    }
    rooms
}

fn enemy(rng: &mut Rng, theme: &Theme, floor: u32) -> Enemy {
    let tier = (floor as usize - 1 + rng.below(2) as usize).min(theme.monsters.len() - 1);
    let (name, element) = theme.monsters[tier];
    let level = floor as i32 + rng.range(0, 1);
    stats(name, element, level, false)
}

fn stats(name: &str, element: Element, level: i32, boss: bool) -> Enemy {
    let hp = 8 + 5 * level;
    Enemy {
        name: name.to_owned(),
        hp,
        max_hp: hp,
        atk: 7 + 3 * level,
        def: 1 + level,
        element,
        level,
        boss,
    }
}

fn loot(rng: &mut Rng, theme: &Theme, floor: u32) -> Item {
    let roll = rng.below(100);
    let f = i64::from(floor);
    match roll {
        0..=34 => Item::health_potion(),
        35..=44 => Item::greater_potion(),
        45..=69 => {
            let value = rng.range(15, 40) as i64 * f;
            Item::treasure("Gold Coins", value)
        }
        70..=79 => Item::vigor_elixir(),
        80..=89 => Item::fire_bomb(),
        _ => {
            let (name, element) = theme.weapons[rng.below(theme.weapons.len() as u64) as usize];
            let id = name.to_ascii_lowercase().replace([' ', '\''], "-");
            Item::weapon(&id, name, 2 + floor as i32, element)
        }
    }
}

fn fill_room(rng: &mut Rng, theme: &Theme, floor: u32, index: usize, room: &mut Room) {
    let mood = theme.moods[rng.below(theme.moods.len() as u64) as usize];
    let last = index == ROOMS_PER_FLOOR - 1;
    if index == 0 {
        room.description = format!(
            "{}. The way you came is sealed behind you. {mood}",
            room.name
        );
        return;
    }
    if last && floor as usize == FLOORS {
        let (name, element) = theme.boss;
        let mut boss = stats(name, element, 7, true);
        boss.hp = 110;
        boss.max_hp = 110;
        boss.atk = 22;
        boss.def = 7;
        room.enemies.push(boss);
        room.description = format!("{}: the heart of the {}. {mood}", room.name, theme.name);
        return;
    }
    if last {
        let (name, element) = theme.guardian;
        let mut guardian = stats(name, element, floor as i32 + 1, false);
        guardian.hp += 8;
        guardian.max_hp += 8;
        room.enemies.push(guardian);
        room.stairs = true;
        room.items.push(loot(rng, theme, floor));
        room.description = format!("{}. Stairs lead down into darkness. {mood}", room.name);
        return;
    }
    room.description = format!("{}. {mood}", room.name);
    let roll = rng.below(100);
    let count = if roll < 35 {
        1
    } else if roll < 48 {
        2
    } else {
        0
    };
    for _ in 0..count {
        room.enemies.push(enemy(rng, theme, floor));
    }
    if rng.percent(30) {
        room.trap = Some(Trap {
            name: theme.traps[rng.below(3) as usize].to_owned(),
            damage: 6 + 3 * floor as i32,
            state: TrapState::Armed,
        });
    }
    if rng.percent(25) {
        let treasure = Item::treasure("Ancient Relic", rng.range(40, 80) as i64 * i64::from(floor));
        let reward = if rng.percent(50) {
            treasure
        } else {
            loot(rng, theme, floor + 1)
        };
        room.puzzle = Some(Puzzle {
            name: theme.puzzles[rng.below(3) as usize].to_owned(),
            state: PuzzleState::Unsolved,
            attempts_left: 3,
            reward,
        });
    }
    if rng.percent(45) {
        room.items.push(loot(rng, theme, floor));
    }
    if rng.percent(35) {
        room.hidden.push(loot(rng, theme, floor));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_from_civil_matches_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 11, 23), 20_780);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }

    #[test]
    fn same_date_same_map_and_the_theme_rotates_daily() {
        let a = DungeonMap::for_date(2026, 11, 23, "salt");
        assert_eq!(a, DungeonMap::for_date(2026, 11, 23, "salt"));
        assert_eq!(a.id, "2026-11-23");
        let b = DungeonMap::for_date(2026, 11, 24, "salt");
        assert_ne!(a.seed, b.seed);
        assert_ne!(a.theme, b.theme);
        assert_ne!(a.seed, DungeonMap::for_date(2026, 11, 23, "other").seed);
    }

    #[test]
    fn every_floor_is_connected_with_symmetric_exits_and_a_way_down() {
        for seed in 0..200 {
            let map = DungeonMap::generate("t", seed, seed as usize);
            assert_eq!(map.rooms.len(), FLOORS * ROOMS_PER_FLOOR);
            for floor in 1..=FLOORS as u32 {
                let base = DungeonMap::entrance(floor);
                let mut seen = vec![base];
                let mut i = 0;
                while i < seen.len() {
                    for exit in &map.rooms[seen[i]].exits {
                        if exit.direction == DOWN {
                            assert_eq!(exit.room, DungeonMap::entrance(floor + 1));
                            continue;
                        }
                        assert!((base..base + ROOMS_PER_FLOOR).contains(&exit.room));
                        let back = &map.rooms[exit.room].exits;
                        assert!(back.iter().any(|e| e.room == seen[i]), "exits are two-way");
                        if !seen.contains(&exit.room) {
                            seen.push(exit.room);
                        }
                    }
                    i += 1;
                }
                assert_eq!(seen.len(), ROOMS_PER_FLOOR, "seed {seed} floor {floor}");
                let entrance = &map.rooms[base];
                assert!(entrance.enemies.is_empty() && entrance.trap.is_none());
                let last = &map.rooms[base + ROOMS_PER_FLOOR - 1];
                assert!(!last.enemies.is_empty());
                assert_eq!(last.stairs, floor < FLOORS as u32);
                assert_eq!(last.enemies.iter().any(|e| e.boss), floor == FLOORS as u32);
            }
            assert_eq!(
                map.rooms
                    .iter()
                    .filter(|r| r.enemies.iter().any(|e| e.boss))
                    .count(),
                1
            );
        }
    }

    #[test]
    fn room_ids_are_unique_and_found() {
        let map = DungeonMap::generate("t", 9, 0);
        let index = |id: &str| map.rooms.iter().position(|room| room.id == id);
        assert_eq!(index("f1r1"), Some(0));
        assert_eq!(index("f4r8"), Some(31));
        assert_eq!(index("nowhere"), None);
    }
}
