//! The rotating themes: names, monsters, traps, puzzles and weapons that dress a generated map.
//! Pure data; one theme per day in rotation (see `map::DungeonMap::for_date`).

use super::entities::Element;

/// One dungeon theme. The four monsters are in rising order of menace; floors draw from them.
#[derive(Debug)]
pub(super) struct Theme {
    pub name: &'static str,
    pub rooms: [&'static str; 8],
    pub moods: [&'static str; 4],
    pub monsters: [(&'static str, Element); 4],
    pub guardian: (&'static str, Element),
    pub boss: (&'static str, Element),
    pub traps: [&'static str; 3],
    pub puzzles: [&'static str; 3],
    pub weapons: [(&'static str, Element); 3],
}

pub(super) const THEMES: [Theme; 7] = [
    Theme {
        name: "Crypt",
        rooms: [
            "Ossuary",
            "Burial Hall",
            "Embalming Room",
            "Catacomb",
            "Chapel of Bones",
            "Sarcophagus Vault",
            "Mourners' Gallery",
            "Charnel Pit",
        ],
        moods: [
            "Dust hangs in the stale air.",
            "Candles gutter in wall niches.",
            "Bones crunch underfoot.",
            "A cold draught smells of old earth.",
        ],
        monsters: [
            ("Skeleton", Element::None),
            ("Ghoul", Element::Poison),
            ("Wraith", Element::Shadow),
            ("Bone Knight", Element::Shadow),
        ],
        guardian: ("Crypt Warden", Element::Shadow),
        boss: ("Lich King", Element::Shadow),
        traps: ["Spike Pit", "Poison Needle", "Collapsing Ceiling"],
        puzzles: ["Rune Lock", "Ossuary Riddle", "Bell of the Dead"],
        weapons: [
            ("Blessed Mace", Element::Holy),
            ("Torchbrand", Element::Fire),
            ("Grave Axe", Element::None),
        ],
    },
    Theme {
        name: "Sunken Temple",
        rooms: [
            "Flooded Nave",
            "Coral Altar",
            "Tide Pool",
            "Drowned Cloister",
            "Shrine of Pearls",
            "Salt Archive",
            "Kelp Garden",
            "Abyssal Stair",
        ],
        moods: [
            "Water drips from a cracked dome.",
            "Barnacles crust the pillars.",
            "Your boots slosh through knee-deep brine.",
            "Faint chanting echoes from below.",
        ],
        monsters: [
            ("Crab Acolyte", Element::None),
            ("Eel Priest", Element::Ice),
            ("Drowned Monk", Element::Poison),
            ("Deep One", Element::Shadow),
        ],
        guardian: ("Temple Sentinel", Element::Ice),
        boss: ("Leviathan Oracle", Element::Ice),
        traps: ["Flood Gate", "Urchin Snare", "Slick Stairs"],
        puzzles: ["Tide Dial", "Pearl Mosaic", "Choir Lock"],
        weapons: [
            ("Coral Trident", Element::None),
            ("Sunfire Spear", Element::Fire),
            ("Sacred Harpoon", Element::Holy),
        ],
    },
    Theme {
        name: "Goblin Warren",
        rooms: [
            "Muddy Den",
            "Trophy Hole",
            "Fungus Larder",
            "Chief's Hall",
            "Scrap Pile",
            "Wolf Pen",
            "Tunnel Fork",
            "Smoke Cave",
        ],
        moods: [
            "It stinks of wet fur.",
            "Crude drawings cover the walls.",
            "Something scurries just out of sight.",
            "Smoke stings your eyes.",
        ],
        monsters: [
            ("Goblin Sneak", Element::None),
            ("Goblin Archer", Element::None),
            ("Warg", Element::Poison),
            ("Hobgoblin Brute", Element::Fire),
        ],
        guardian: ("Goblin Captain", Element::Fire),
        boss: ("Goblin Warlord", Element::Fire),
        traps: ["Tripwire Crossbow", "Net Drop", "Greased Slide"],
        puzzles: ["Goblin Cipher", "Lever Bank", "Counting Stones"],
        weapons: [
            ("Frost Cleaver", Element::Ice),
            ("Spiked Club", Element::None),
            ("Wyrm Fang", Element::Fire),
        ],
    },
    Theme {
        name: "Frozen Keep",
        rooms: [
            "Ice Hall",
            "Frost Armory",
            "Snowbound Court",
            "Glacier Throne",
            "Frozen Kitchen",
            "Icicle Gallery",
            "Blizzard Tower",
            "Rime Cellar",
        ],
        moods: [
            "Your breath freezes in the air.",
            "Icicles hang like teeth.",
            "The walls glitter with frost.",
            "Wind howls through arrow slits.",
        ],
        monsters: [
            ("Frost Imp", Element::Ice),
            ("Ice Wolf", Element::Ice),
            ("Snow Troll", Element::None),
            ("Frozen Knight", Element::Ice),
        ],
        guardian: ("Winter Warden", Element::Ice),
        boss: ("Frost Queen", Element::Ice),
        traps: ["Thin Ice", "Falling Icicles", "Frost Glyph"],
        puzzles: ["Crystal Prism", "Frozen Clock", "Snowflake Seal"],
        weapons: [
            ("Ember Blade", Element::Fire),
            ("Warhammer", Element::None),
            ("Dawn Sword", Element::Holy),
        ],
    },
    Theme {
        name: "Ember Forge",
        rooms: [
            "Slag Hall",
            "Anvil Room",
            "Bellows Chamber",
            "Molten Channel",
            "Smelter",
            "Ash Vault",
            "Cinder Walk",
            "Furnace Heart",
        ],
        moods: [
            "Heat shimmers in the air.",
            "Sparks drift upward.",
            "The floor glows red at the seams.",
            "Hammers ring somewhere far away.",
        ],
        monsters: [
            ("Cinder Rat", Element::Fire),
            ("Magma Hound", Element::Fire),
            ("Forge Golem", Element::None),
            ("Salamander", Element::Fire),
        ],
        guardian: ("Forgemaster", Element::Fire),
        boss: ("Molten Titan", Element::Fire),
        traps: ["Steam Vent", "Falling Crucible", "Hot Coals"],
        puzzles: ["Alloy Scale", "Gear Train", "Bellows Rhythm"],
        weapons: [
            ("Glacier Pick", Element::Ice),
            ("Tempered Sword", Element::None),
            ("Quenching Blade", Element::Ice),
        ],
    },
    Theme {
        name: "Fungal Caverns",
        rooms: [
            "Spore Grotto",
            "Mushroom Forest",
            "Glowing Pool",
            "Mycelium Web",
            "Rotting Hollow",
            "Puffball Field",
            "Dripping Cave",
            "Root Chamber",
        ],
        moods: [
            "Spores glow a sickly green.",
            "The ground is soft and spongy.",
            "A sweet, rotten smell fills the cave.",
            "Luminous caps light the way.",
        ],
        monsters: [
            ("Spore Bat", Element::Poison),
            ("Myconid", Element::Poison),
            ("Cave Spider", Element::Poison),
            ("Fungal Hulk", Element::None),
        ],
        guardian: ("Sporemother", Element::Poison),
        boss: ("Mycelial Overmind", Element::Poison),
        traps: ["Spore Burst", "Sinkhole", "Web Snare"],
        puzzles: ["Glowcap Pattern", "Root Maze", "Echo Chamber"],
        weapons: [
            ("Flame Sickle", Element::Fire),
            ("Bone Spear", Element::None),
            ("Torch Axe", Element::Fire),
        ],
    },
    Theme {
        name: "Clockwork Vault",
        rooms: [
            "Gear Hall",
            "Pendulum Room",
            "Vault Antechamber",
            "Spring Works",
            "Brass Library",
            "Escapement",
            "Counting House",
            "Mainspring",
        ],
        moods: [
            "Gears tick behind the walls.",
            "Brass pipes hiss.",
            "Everything here moves on a schedule.",
            "The floor trembles with machinery.",
        ],
        monsters: [
            ("Cog Mite", Element::None),
            ("Brass Sentry", Element::None),
            ("Tesla Drone", Element::Fire),
            ("Iron Golem", Element::Shadow),
        ],
        guardian: ("Vault Keeper", Element::Shadow),
        boss: ("Grand Automaton", Element::Shadow),
        traps: ["Pendulum Blade", "Crushing Press", "Arc Plate"],
        puzzles: ["Combination Dial", "Gear Puzzle", "Punch-Card Lock"],
        weapons: [
            ("Radiant Hammer", Element::Holy),
            ("Saw Blade", Element::None),
            ("Sun Lance", Element::Holy),
        ],
    },
];

/// The theme of a given day number (days since 1970-01-01): one after the other, a week round.
pub(super) fn theme_for_day(day: i64) -> usize {
    day.rem_euclid(THEMES.len() as i64) as usize
}
