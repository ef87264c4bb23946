//! Each action's rules and the illegal-action rule, staged on the hand-made map.

use super::*;
use crate::entities::Item;
use crate::*;

#[test]
fn move_costs_one_ap_enters_the_room_and_is_blocked_by_enemies() {
    let mut run = Run::new(&crafted(), Class::Fighter, 3);
    let outcome = ok(&mut run, ActionKind::Move, Some("East"));
    assert_eq!((outcome.turn_number, outcome.ap_spent), (1, 1));
    assert!(outcome.events.iter().any(|e| matches!(e, GameEvent::RoomEntered { room_id, first_visit: true, .. } if room_id == "f1r2")));
    assert!(
        outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::Ambushed { .. })),
        "the goblin strikes first"
    );
    let state = run.view();
    assert_eq!(state.player.ap, 99);
    assert_eq!(state.room.enemies.len(), 1);
    assert_eq!(state.room.items.len(), 1, "guarded gold stays on the floor");
    assert!(!state.available_actions.contains(&ActionKind::Move));
    assert!(state.available_actions.contains(&ActionKind::Fight));
    assert!(state.available_actions.contains(&ActionKind::Flee));
    // A room id works as a target too.
    let mut run = Run::new(&crafted(), Class::Fighter, 3);
    ok(&mut run, ActionKind::Move, Some("f1r3"));
    assert_eq!(run.view().room.room_id, "f1r3");
}

#[test]
fn fight_costs_two_ap_a_round_and_a_kill_pays_xp_score_and_loot() {
    let (run, outcome) = find_seed(
        Class::Fighter,
        |run| {
            ok(run, ActionKind::Move, Some("east"));
        },
        |run, _| run.view().room.enemies.is_empty(),
        act(ActionKind::Fight, Some("goblin")),
    );
    assert_eq!(outcome.ap_spent, 2);
    assert!(
        outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::EnemyDefeated { xp: 10, .. }))
    );
    assert!(
        outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::TreasureFound { value: 50, .. }))
    );
    let state = run.view();
    assert_eq!(state.player.ap, 100 - 1 - 2);
    assert_eq!(state.player.xp, 10);
    assert!(state.room.items.is_empty(), "unguarded loot is picked up");
    assert_eq!(run.tally().kills, 1);
    assert_eq!(state.score, 2 * 10 + 5 * 10 + 50);
    assert!(state.available_actions.contains(&ActionKind::Move));

    // A miss leaves the enemy whole, and it answers.
    let (run, outcome) = find_seed(
        Class::Fighter,
        |run| {
            ok(run, ActionKind::Move, Some("east"));
        },
        |_, o| matches!(o.events[0], GameEvent::CombatRound { hit: false, .. }),
        act(ActionKind::Fight, Some("1")),
    );
    assert_eq!(run.view().room.enemies[0].hp, 6);
    assert!(matches!(
        outcome.events[0],
        GameEvent::CombatRound { enemy_hp: 6, .. }
    ));
}

#[test]
fn rangers_strike_first_and_the_survivors_then_ambush() {
    let mut run = Run::new(&crafted(), Class::Ranger, 2);
    let outcome = ok(&mut run, ActionKind::Move, Some("east"));
    assert!(
        outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::FirstStrike { .. }))
    );
    assert!(
        !outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::Ambushed { .. }))
    );
    assert_eq!(run.player().hp, 100);
    // 6 HP goblin; half of the ranger's blow (8 atk + 2 dagger + 2 int − 0 def) is ≥ 6.
    assert!(run.view().room.enemies.is_empty());
    assert_eq!(run.tally().treasure, 50);

    let mut map = crafted();
    map.rooms[GUARDED].enemies[0].hp = 50;
    let mut run = Run::new(&map, Class::Ranger, 2);
    let outcome = ok(&mut run, ActionKind::Move, Some("east"));
    let kinds: Vec<&str> = outcome
        .events
        .iter()
        .map(|e| match e {
            GameEvent::FirstStrike { .. } => "first_strike",
            GameEvent::Ambushed { .. } => "ambushed",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["other", "first_strike", "ambushed"]);
    let hp = run.view().room.enemies[0].hp;
    assert!((43..=44).contains(&hp), "half of 12..=15: {hp}");
}

#[test]
fn flee_costs_three_and_returns_to_the_previous_room_or_fails_under_blows() {
    let setup = |run: &mut Run| {
        ok(run, ActionKind::Move, Some("east"));
    };
    let (run, outcome) = find_seed(
        Class::Defender,
        setup,
        |r, _| r.view().room.room_id == "f1r1",
        act(ActionKind::Flee, None),
    );
    assert_eq!(outcome.ap_spent, 3);
    assert_eq!(run.view().player.ap, 96);
    assert!(matches!(&outcome.events[0], GameEvent::Fled { room_id } if room_id == "f1r1"));
    let (run, outcome) = find_seed(
        Class::Defender,
        setup,
        |r, _| r.view().room.room_id == "f1r2",
        act(ActionKind::Flee, None),
    );
    assert!(matches!(outcome.events[0], GameEvent::FleeFailed { .. }));
    assert_eq!(run.view().room.enemies.len(), 1);
    // Nowhere to flee from the first room of a floor.
    let mut fresh = Run::new(&crafted(), Class::Defender, 1);
    assert!(!fresh.legal_actions().contains(&ActionKind::Flee));
    assert!(fresh.apply(&act(ActionKind::Flee, None)).is_err());
}

#[test]
fn use_item_heals_restores_equips_and_bombs_with_their_limits() {
    let mut run = Run::new(&crafted(), Class::Mage, 4);
    run.player.hp = 50;
    let outcome = ok(&mut run, ActionKind::UseItem, Some("Health Potion"));
    assert_eq!(outcome.ap_spent, 1);
    assert_eq!(run.player().hp, 85);
    assert!(run.player().inventory.is_empty());
    assert!(!run.legal_actions().contains(&ActionKind::UseItem));

    run.player.inventory.push(Item::vigor_elixir());
    run.player
        .inventory
        .push(Item::weapon("holy-mace", "Holy Mace", 6, Element::Holy));
    ok(&mut run, ActionKind::UseItem, Some("vigor-elixir"));
    assert_eq!(run.player().ap, 100, "capped at maxAp: 99 − 1 + 12 → 100");
    ok(&mut run, ActionKind::UseItem, Some("holy-mace"));
    assert_eq!(run.player().weapon.name, "Holy Mace");
    assert_eq!(
        run.player().inventory[0].id,
        "dagger",
        "the old weapon is kept"
    );

    run.player.inventory.push(Item::fire_bomb());
    let err = run.apply(&act(ActionKind::UseItem, Some("fire-bomb")));
    assert!(
        matches!(err, Err(TurnError::Illegal { .. })),
        "no enemy to throw it at"
    );
    ok(&mut run, ActionKind::Move, Some("east"));
    let outcome = ok(&mut run, ActionKind::UseItem, Some("fire-bomb"));
    assert!(
        outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::EnemyDefeated { .. }))
    );
    assert_eq!(run.tally().treasure, 50);
}

#[test]
fn examine_reveals_hidden_items_once() {
    let mut run = Run::new(&crafted(), Class::Rogue, 5);
    ok(&mut run, ActionKind::Move, Some("south"));
    assert!(run.legal_actions().contains(&ActionKind::Examine));
    let outcome = ok(&mut run, ActionKind::Examine, None);
    assert_eq!(outcome.ap_spent, 1);
    assert!(
        matches!(&outcome.events[0], GameEvent::Examined { found, .. } if found == &vec!["Fire Bomb".to_owned()])
    );
    assert!(run.player().inventory.iter().any(|i| i.id == "fire-bomb"));
    assert!(!run.legal_actions().contains(&ActionKind::Examine));
}

#[test]
fn solve_rewards_success_and_seals_after_three_failures() {
    let setup = |run: &mut Run| {
        ok(run, ActionKind::Move, Some("south"));
    };
    let (run, outcome) = find_seed(
        Class::Mage,
        setup,
        |_, o| matches!(o.events[0], GameEvent::PuzzleSolved { .. }),
        act(ActionKind::Solve, None),
    );
    assert_eq!(outcome.ap_spent, 2);
    assert_eq!(run.player().xp, 20);
    assert!(
        run.player()
            .inventory
            .iter()
            .any(|i| i.id == "greater-potion")
    );
    assert!(!run.legal_actions().contains(&ActionKind::Solve));

    let (mut run, outcome) = find_seed(
        Class::Fighter,
        setup,
        |_, o| matches!(o.events[0], GameEvent::PuzzleFailed { .. }),
        act(ActionKind::Solve, None),
    );
    assert!(matches!(
        outcome.events[0],
        GameEvent::PuzzleFailed {
            damage: 5,
            attempts_left: 2,
            ..
        }
    ));
    assert_eq!(run.player().hp, 95);

    // An int so low the chance is 0: the next two attempts fail and seal the puzzle for good.
    run.player.int = -20;
    ok(&mut run, ActionKind::Solve, None);
    let outcome = ok(&mut run, ActionKind::Solve, None);
    assert!(matches!(
        outcome.events[0],
        GameEvent::PuzzleFailed {
            attempts_left: 0,
            ..
        }
    ));
    assert_eq!(run.player().hp, 85);
    assert!(
        run.view()
            .room
            .objects
            .iter()
            .any(|o| o.kind == "puzzle" && o.state == "sealed")
    );
    assert!(!run.legal_actions().contains(&ActionKind::Solve));
    assert!(
        !run.player()
            .inventory
            .iter()
            .any(|i| i.id == "greater-potion")
    );
}

#[test]
fn traps_spring_on_leaving_until_disarmed() {
    let mut run = Run::new(&crafted(), Class::Fighter, 6);
    ok(&mut run, ActionKind::Move, Some("south"));
    let outcome = ok(&mut run, ActionKind::Move, Some("north"));
    assert!(matches!(
        outcome.events[0],
        GameEvent::TrapSprung { damage: 10, .. }
    ));
    assert_eq!(run.player().hp, 90);
    ok(&mut run, ActionKind::Move, Some("south"));
    ok(&mut run, ActionKind::Move, Some("north"));
    assert_eq!(run.player().hp, 80, "it resets");

    let setup = |run: &mut Run| {
        ok(run, ActionKind::Move, Some("south"));
    };
    let (mut run, outcome) = find_seed(
        Class::Rogue,
        setup,
        |_, o| matches!(o.events[0], GameEvent::TrapDisarmed { .. }),
        act(ActionKind::Disarm, None),
    );
    assert_eq!(outcome.ap_spent, 2);
    assert!(!run.legal_actions().contains(&ActionKind::Disarm));
    let leave = ok(&mut run, ActionKind::Move, Some("north"));
    assert!(
        !leave
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::TrapSprung { .. }))
    );
    assert_eq!(run.player().hp, 100);

    let (run, _) = find_seed(
        Class::Fighter,
        setup,
        |_, o| matches!(o.events[0], GameEvent::TrapSprung { .. }),
        act(ActionKind::Disarm, None),
    );
    assert_eq!(run.player().hp, 90);
    assert!(
        run.legal_actions().contains(&ActionKind::Disarm),
        "a failed disarm leaves it armed"
    );
}

#[test]
fn rest_heals_once_per_room_and_never_while_enemies_live() {
    let mut run = Run::new(&crafted(), Class::Fighter, 7);
    assert!(
        !run.legal_actions().contains(&ActionKind::Rest),
        "already at full HP"
    );
    run.player.hp = 40;
    let outcome = ok(&mut run, ActionKind::Rest, None);
    assert_eq!(outcome.ap_spent, 3);
    assert_eq!(run.player().hp, 65);
    assert!(
        !run.legal_actions().contains(&ActionKind::Rest),
        "once per room"
    );
    ok(&mut run, ActionKind::Move, Some("east"));
    assert!(
        !run.legal_actions().contains(&ActionKind::Rest),
        "the goblin is watching"
    );
}

#[test]
fn inventory_is_free_but_counts_as_a_turn() {
    let mut run = Run::new(&crafted(), Class::Gambler, 8);
    let outcome = ok(&mut run, ActionKind::Inventory, None);
    assert_eq!((outcome.ap_spent, outcome.turn_number), (0, 1));
    assert!(
        matches!(&outcome.events[0], GameEvent::Inventory { items } if items == &vec!["health-potion".to_owned()])
    );
    assert_eq!(run.player().ap, 100);
}

#[test]
fn the_stairs_lead_down_and_count_as_depth() {
    let mut run = Run::new(&crafted(), Class::Ranger, 9);
    ok(&mut run, ActionKind::Move, Some("east"));
    assert!(
        run.view().room.enemies.is_empty(),
        "first strike killed the goblin"
    );
    ok(&mut run, ActionKind::Move, Some("east"));
    assert!(
        run.view()
            .room
            .objects
            .iter()
            .any(|o| o.kind == "stairs" && o.state == "open")
    );
    let outcome = ok(&mut run, ActionKind::Move, Some("down"));
    assert!(
        outcome
            .events
            .iter()
            .any(|e| matches!(e, GameEvent::FloorReached { floor: 2 }))
    );
    assert_eq!(run.view().room.floor, 2);
    assert_eq!(run.tally().deepest_floor, 2);
    assert!(
        !run.legal_actions().contains(&ActionKind::Flee),
        "no way back up the stairs"
    );
}

// ---- the illegal-action rule -------------------------------------------------------------------

#[test]
fn an_illegal_action_costs_one_ap_lists_the_legal_ones_and_does_not_advance_the_turn() {
    let mut run = Run::new(&crafted(), Class::Fighter, 10);
    for action in [
        Action {
            action: "dance".to_owned(),
            target: None,
        },
        act(ActionKind::Fight, None),
        act(ActionKind::Move, Some("up")),
        act(ActionKind::Move, None),
        act(ActionKind::UseItem, Some("sword")),
    ] {
        let ap = run.player().ap;
        match run.apply(&action) {
            Err(TurnError::Illegal {
                legal,
                events,
                reason,
                ..
            }) => {
                assert_eq!(legal, run.legal_actions());
                assert!(!reason.is_empty());
                assert!(matches!(
                    events[0],
                    GameEvent::IllegalAction { ap_charged: 1, .. }
                ));
            }
            other => panic!("{action:?} was not refused: {other:?}"),
        }
        assert_eq!(run.player().ap, ap - 1);
        assert_eq!(run.turn_number(), 0);
    }
    ok(&mut run, ActionKind::Move, Some("east"));
    assert_eq!(run.turn_number(), 1);
}
