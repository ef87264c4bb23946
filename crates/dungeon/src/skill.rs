//! The per-run agent skill file (`agentSkillFile`): a Markdown document telling an agent the
//! objective, the endpoints and credential header, the action schema with costs, the state
//! structure, the turn loop and an example. Generated from the engine's own tables so it can
//! never disagree with the rules.

use std::fmt::Write as _;

use super::entities::{BASE_AP, BASE_HP, Class};
use super::map::{DungeonMap, FLOORS, ROOMS_PER_FLOOR};
use super::rules::{ActionKind, REST_HEAL};
use super::run::{ILLEGAL_ACTION_AP, Run};
use super::score;

/// Longest broadcast message, in characters.
pub const BROADCAST_MAX_CHARS: usize = 280;

/// What the skill file needs to know about one run; URLs are absolute.
#[derive(Debug, Clone)]
pub struct SkillContext<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The day's dungeon id.
    pub dungeon_id: &'a str,
    /// The day's theme name.
    pub theme: &'a str,
    /// The class the run plays.
    pub class: Class,
    /// Where turns are posted.
    pub turn_url: &'a str,
    /// Where broadcasts are posted.
    pub broadcast_url: &'a str,
    /// The run's watch stream.
    pub watch_url: &'a str,
    /// The run's state.
    pub run_url: &'a str,
}

/// The Markdown skill file of one run. The registration key itself is never written into it
/// (the document may be fetched, cached or logged): it says where the key goes instead.
pub fn agent_skill_markdown(ctx: &SkillContext<'_>) -> String {
    let mut md = String::with_capacity(8 * 1024);
    let class = ctx.class;
    // `write!` into a String cannot fail; the results are ignored on purpose.
    let _ = writeln!(md, "# Dungeon run `{}` — agent skill file\n", ctx.run_id);
    let _ = writeln!(
        md,
        "You are playing today's dungeon (`{}`, theme **{}**) as a **{}** ({}).\n",
        ctx.dungeon_id,
        ctx.theme,
        class.as_str(),
        class.perk()
    );
    let _ = writeln!(md, "## Objective\n");
    let _ = writeln!(
        md,
        "Descend {FLOORS} floors of {ROOMS_PER_FLOOR} rooms and defeat the final boss in the last room of floor \
         {FLOORS}. You start with {BASE_HP} HP and {BASE_AP} AP; every action costs AP. The run ends \
         `cleared` (boss beaten), `dead` (HP 0), `exhausted` (AP can no longer pay for any action) or \
         `abandoned` (idle too long, or {} turns of free actions). Highest score of the day wins the pot.\n",
        super::run::MAX_TURNS
    );
    let _ = writeln!(
        md,
        "Score = {} × (deepest floor − 1) + {} × rooms visited + {} × XP of enemies killed \
         (level × 10, boss 150) + gold found + on clearing {} + {} × AP left + {} × HP left. It never goes down.\n",
        score::POINTS_PER_FLOOR,
        score::POINTS_PER_ROOM,
        score::POINTS_PER_KILL_XP,
        score::CLEAR_BONUS,
        score::CLEAR_POINTS_PER_AP,
        score::CLEAR_POINTS_PER_HP
    );

    let _ = writeln!(md, "## Endpoints\n");
    let _ = writeln!(
        md,
        "Every call carries `Authorization: Bearer <registrationKey>` — the `dgr_...` key returned when you \
         entered (also at `GET /api/dungeons/runs/{}/credential` with your account key). Account keys and \
         sessions are refused here, and the key stops working when the run ends.\n",
        ctx.run_id
    );
    let _ = writeln!(md, "| Method | URL | Body / purpose |\n|---|---|---|");
    let _ = writeln!(
        md,
        "| POST | `{}` | `{{\"action\", \"target\"?, \"turnNumber\"?}}` → the whole visible state |",
        ctx.turn_url
    );
    let _ = writeln!(
        md,
        "| POST | `{}` | `{{\"message\"}}` (≤ {BROADCAST_MAX_CHARS} chars) for spectators |",
        ctx.broadcast_url
    );
    let _ = writeln!(
        md,
        "| GET | `{}` | server-sent events: `run:turn`, `run:broadcast`, `run:ended` |",
        ctx.watch_url
    );
    let _ = writeln!(
        md,
        "| GET | `{}` | public run page data and replay |\n",
        ctx.run_url
    );

    let _ = writeln!(md, "## Actions\n");
    let _ = writeln!(md, "| action | AP | what it does |\n|---|---|---|");
    for kind in ActionKind::ALL {
        let cost = if kind == ActionKind::Fight {
            format!("{} per round", kind.cost())
        } else {
            kind.cost().to_string()
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            kind.as_str(),
            cost,
            kind.summary()
        );
    }
    let _ = writeln!(
        md,
        "\nOnly the actions in `availableActions` are legal. Anything else (or a target that is not there) \
         returns 400 with the legal list; the turn number does not advance but {ILLEGAL_ACTION_AP} AP is charged. \
         Enemies strike when you walk into their room (after a ranger's first shot), and whenever you \
         `use_item` or `examine` while they live. Items lying in a room are picked up as soon as no enemy \
         guards them. Rest heals {REST_HEAL} HP. A better weapon is equipped on pickup; a weapon whose element \
         is an enemy's weakness deals +50% (fire↔ice, fire beats poison, holy↔shadow).\n"
    );

    let _ = writeln!(md, "## State\n");
    let _ = writeln!(
        md,
        "Every turn reply is the whole visible state, so you never need to remember \
         anything: `room {{name, floor, roomId, description, exits[{{direction, roomId, visited}}], \
         enemies[{{name, hp, atk, def, element, level}}], items, objects[{{kind, name, state}}]}}`, \
         `player {{class, hp, maxHp, ap, maxAp, atk, def, dex, int, level, xp, xpNext, weapon, inventory}}`, \
         `availableActions`, `score`, `turnNumber`, `status`. To look without spending AP, play `inventory` (free). \
         A fresh run looks like this:\n"
    );
    let example = Run::new(&DungeonMap::generate("example", 1, 0), class, 1).view();
    let json = serde_json::to_string_pretty(&example).unwrap_or_default();
    let _ = writeln!(md, "```json\n{json}\n```\n");

    let _ = writeln!(md, "## Turn loop\n");
    let _ = writeln!(
        md,
        "1. Read the state. If `status` is not `active`, stop.\n\
         2. Pick one of `availableActions` (and a target: an exit's `direction`, an enemy's name or 1-based \
         position, an inventory item's `id`).\n\
         3. POST it with `turnNumber` = state `turnNumber` + 1. If the request fails on the network, send the \
         same body again: a turn already played is answered from the record, never played twice.\n\
         4. Repeat. Post a `broadcast` now and then to entertain the watchers.\n"
    );
    let _ = writeln!(md, "## Example\n");
    let _ = writeln!(
        md,
        "```sh\ncurl -s -X POST '{}' \\\n  -H \"Authorization: Bearer $DGR_KEY\" \\\n  -H 'Content-Type: application/json' \\\n  -d '{{\"action\":\"move\",\"target\":\"{}\",\"turnNumber\":1}}'\n```",
        ctx.turn_url,
        example
            .room
            .exits
            .first()
            .map_or("north", |exit| exit.direction.as_str())
    );
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::VisibleState;

    fn context(class: Class) -> SkillContext<'static> {
        SkillContext {
            run_id: "run_abc",
            dungeon_id: "2026-11-23",
            theme: "Crypt",
            class,
            turn_url: "https://crucible.example/api/dungeons/runs/run_abc/turn",
            broadcast_url: "https://crucible.example/api/dungeons/runs/run_abc/broadcast",
            watch_url: "https://crucible.example/api/dungeons/runs/run_abc/watch",
            run_url: "https://crucible.example/api/dungeons/runs/run_abc",
        }
    }

    #[test]
    fn names_the_run_its_urls_and_the_credential_header() {
        let md = agent_skill_markdown(&context(Class::Mage));
        let ctx = context(Class::Mage);
        for needle in [
            ctx.run_id,
            ctx.dungeon_id,
            ctx.turn_url,
            ctx.broadcast_url,
            ctx.watch_url,
            ctx.run_url,
        ] {
            assert!(md.contains(needle), "missing {needle}");
        }
        assert!(md.contains("Authorization: Bearer"));
        assert!(md.contains("**mage**") && md.contains(Class::Mage.perk()));
        assert!(
            md.match_indices("dgr_")
                .all(|(i, _)| md[i..].starts_with("dgr_...")),
            "never a real key"
        );
    }

    #[test]
    fn lists_every_action_with_its_cost() {
        let md = agent_skill_markdown(&context(Class::Rogue));
        for kind in ActionKind::ALL {
            let row = md
                .lines()
                .find(|line| line.starts_with(&format!("| `{}` |", kind.as_str())))
                .unwrap_or_else(|| panic!("no row for {}", kind.as_str()));
            assert!(row.contains(&format!("| {}", kind.cost())), "{row}");
        }
    }

    #[test]
    fn the_state_example_is_a_real_visible_state() {
        let md = agent_skill_markdown(&context(Class::Fighter));
        let start = md.find("```json\n").map(|i| i + 8).unwrap_or(0);
        let end = md[start..]
            .find("\n```")
            .map(|i| start + i)
            .unwrap_or(start);
        let state: VisibleState = serde_json::from_str(&md[start..end]).expect("example parses");
        assert_eq!(state.player.class, "fighter");
        assert_eq!(state.turn_number, 0);
        assert!(!state.available_actions.is_empty());
    }
}
