//! The end conditions: cleared, dead, exhausted, abandoned; an ended run accepts nothing.

use super::*;
use crate::entities::{Trap, TrapState};
use crate::*;

#[test]
fn beating_the_boss_clears_the_run_with_a_bonus_and_ends_it() {
    let mut run = Run::new(&crafted(), Class::Ranger, 12);
    ok(&mut run, ActionKind::Move, Some("east"));
    ok(&mut run, ActionKind::Move, Some("east"));
    let before = run.score();
    let outcome = ok(&mut run, ActionKind::Move, Some("down"));
    assert_eq!(
        run.status(),
        RunStatus::Cleared,
        "the ranger's first strike fells the 1 HP lich"
    );
    let (ap, hp) = (run.player().ap, run.player().hp);
    assert!(matches!(
        outcome.events.last(),
        Some(GameEvent::RunEnded {
            status: RunStatus::Cleared,
            ..
        })
    ));
    assert_eq!(
        run.score(),
        before + 250 + 10 + 5 * 150 + 1000 + 5 * i64::from(ap) + 2 * i64::from(hp)
    );
    assert!(run.legal_actions().is_empty());
    assert_eq!(
        run.apply(&act(ActionKind::Inventory, None)),
        Err(TurnError::RunOver {
            status: RunStatus::Cleared
        })
    );
    assert_eq!(run.player().ap, ap, "an ended run charges nothing");
}

#[test]
fn hp_zero_is_death() {
    let mut run = Run::new(&crafted(), Class::Fighter, 13);
    run.player.hp = 1;
    run.rooms[WORKSHOP].trap = Some(Trap {
        name: "Blade".to_owned(),
        damage: 50,
        state: TrapState::Armed,
    });
    ok(&mut run, ActionKind::Move, Some("south"));
    let outcome = ok(&mut run, ActionKind::Move, Some("north"));
    assert_eq!(run.status(), RunStatus::Dead);
    assert_eq!(run.player().hp, 0);
    assert_eq!(run.view().room.room_id, "f1r3", "died where the trap was");
    assert!(matches!(
        outcome.events.last(),
        Some(GameEvent::RunEnded {
            status: RunStatus::Dead,
            ..
        })
    ));
    assert!(matches!(
        run.apply(&act(ActionKind::Inventory, None)),
        Err(TurnError::RunOver { .. })
    ));
}

#[test]
fn running_out_of_ap_exhausts_the_run_even_through_illegal_actions() {
    let mut run = Run::new(&crafted(), Class::Fighter, 14);
    run.player.ap = 2;
    run.player.inventory.clear();
    ok(&mut run, ActionKind::Move, Some("south"));
    assert_eq!(run.status(), RunStatus::Active);
    let outcome = ok(&mut run, ActionKind::Examine, None);
    assert_eq!(run.player().ap, 0);
    assert_eq!(run.status(), RunStatus::Exhausted);
    assert!(matches!(
        outcome.events.last(),
        Some(GameEvent::RunEnded {
            status: RunStatus::Exhausted,
            ..
        })
    ));

    let mut run = Run::new(&crafted(), Class::Fighter, 14);
    run.player.ap = 1;
    match run.apply(&act(ActionKind::Rest, None)) {
        Err(TurnError::Illegal { legal, events, .. }) => {
            assert!(legal.is_empty());
            assert!(matches!(
                events.last(),
                Some(GameEvent::RunEnded {
                    status: RunStatus::Exhausted,
                    ..
                })
            ));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(run.status(), RunStatus::Exhausted);

    // AP left but none that can pay for anything: 2 AP in a guarded room without items or exits
    // of escape (fight costs 2, so it is still playable), then 1 AP: exhausted.
    let mut run = Run::new(&crafted(), Class::Ranger, 14);
    run.rooms[GUARDED].enemies[0].hp = 500;
    run.player.inventory.clear();
    run.player.ap = 3;
    ok(&mut run, ActionKind::Move, Some("east"));
    assert_eq!(run.status(), RunStatus::Active);
    ok(&mut run, ActionKind::Fight, None);
    assert_eq!(run.player().ap, 0);
    assert_eq!(run.status(), RunStatus::Exhausted);
}

#[test]
fn abandoning_ends_the_run_once_and_free_action_loops_are_capped() {
    let mut run = Run::new(&crafted(), Class::Fighter, 15);
    let events = run.abandon();
    assert!(matches!(
        events[..],
        [GameEvent::RunEnded {
            status: RunStatus::Abandoned,
            ..
        }]
    ));
    assert!(run.abandon().is_empty());
    assert!(matches!(
        run.apply(&act(ActionKind::Inventory, None)),
        Err(TurnError::RunOver { .. })
    ));

    let mut run = Run::new(&crafted(), Class::Fighter, 15);
    for _ in 0..MAX_TURNS {
        ok(&mut run, ActionKind::Inventory, None);
    }
    assert_eq!(run.status(), RunStatus::Abandoned);
    assert_eq!(run.player().ap, 100);
}
