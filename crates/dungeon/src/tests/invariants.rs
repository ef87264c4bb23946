//! Property test: no action sequence panics or breaks an invariant.

use proptest::prelude::*;

use crate::*;

fn check_invariants(run: &Run, before_score: i64) -> Result<(), TestCaseError> {
    let state = run.view();
    let p = &state.player;
    prop_assert!(p.hp >= 0 && p.hp <= p.max_hp, "hp {} / {}", p.hp, p.max_hp);
    prop_assert!(p.ap >= 0 && p.ap <= p.max_ap, "ap {} / {}", p.ap, p.max_ap);
    prop_assert!(p.xp >= 0 && p.xp < p.xp_next);
    prop_assert_eq!(state.score, run.tally().score());
    prop_assert!(state.score >= before_score, "score went down");
    prop_assert!(state.room.enemies.iter().all(|e| e.hp > 0));
    match state.status {
        RunStatus::Active => {
            prop_assert!(!state.available_actions.is_empty());
            prop_assert!(
                state
                    .available_actions
                    .iter()
                    .any(|k| k.cost() > 0 && k.cost() <= p.ap)
            );
        }
        RunStatus::Dead => prop_assert_eq!(p.hp, 0),
        RunStatus::Cleared => prop_assert!(run.tally().cleared_with.is_some()),
        RunStatus::Exhausted | RunStatus::Abandoned => {}
    }
    if state.status.is_over() {
        prop_assert!(state.available_actions.is_empty());
    }
    Ok(())
}

fn arbitrary_action() -> impl Strategy<Value = Action> {
    (0usize..10, 0usize..6, any::<bool>()).prop_map(|(kind, target, garbage)| {
        let action = ActionKind::ALL
            .get(kind)
            .map_or("jump", |k| k.as_str())
            .to_owned();
        let targets = ["north", "south", "east", "west", "down", "1"];
        let target = if garbage {
            None
        } else {
            Some(match ActionKind::parse(&action) {
                Some(ActionKind::UseItem) => [
                    "health-potion",
                    "greater-potion",
                    "vigor-elixir",
                    "fire-bomb",
                    "dagger",
                    "nothing",
                ][target]
                    .to_owned(),
                Some(ActionKind::Fight) => ["1", "2", "3", "0", "Skeleton", "x"][target].to_owned(),
                _ => targets[target].to_owned(),
            })
        };
        Action { action, target }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_action_sequence_panics_or_breaks_an_invariant(
        map_seed in any::<u64>(),
        run_seed in any::<u64>(),
        class in 0usize..6,
        actions in proptest::collection::vec(arbitrary_action(), 1..300),
    ) {
        let map = DungeonMap::generate("prop", map_seed, map_seed as usize);
        let mut run = Run::new(&map, Class::ALL[class], run_seed);
        check_invariants(&run, 0)?;
        for action in &actions {
            let (score, turn, status) = (run.score(), run.turn_number(), run.status());
            let ap = run.player().ap;
            match run.apply(action) {
                Ok(outcome) => {
                    prop_assert_eq!(outcome.turn_number, turn + 1);
                    prop_assert_eq!(outcome.ap_spent, outcome.action.cost());
                }
                Err(TurnError::Illegal { legal, .. }) => {
                    prop_assert_eq!(run.turn_number(), turn);
                    prop_assert_eq!(run.player().ap, ap - 1);
                    prop_assert_eq!(legal, run.legal_actions());
                }
                Err(TurnError::RunOver { status: over }) => {
                    prop_assert!(status.is_over());
                    prop_assert_eq!(over, status);
                    prop_assert_eq!(run.player().ap, ap);
                    prop_assert_eq!(run.turn_number(), turn);
                }
            }
            check_invariants(&run, score)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever a client writes in `action` and `target` (any Unicode, any length, near-misses
    /// of real names), the parser answers legal or illegal and the run keeps its invariants.
    #[test]
    fn any_action_text_is_parsed_or_refused_never_a_panic(
        map_seed in any::<u64>(),
        class in 0usize..6,
        texts in proptest::collection::vec(
            (
                prop_oneof![".{0,40}", "(MOVE|move|Move|fight|use_item|use-item|rest|flee|jump) ?.{0,3}", "\\PC{0,400}"],
                proptest::option::of(prop_oneof![".{0,40}", "[0-9]{1,25}", "-?[0-9]{1,5}", "\\PC{0,400}"]),
            ),
            1..60,
        ),
    ) {
        let map = DungeonMap::generate("prop-text", map_seed, map_seed as usize);
        let mut run = Run::new(&map, Class::ALL[class], map_seed ^ 7);
        for (action, target) in texts {
            let score = run.score();
            let _ = ActionKind::parse(&action);
            let _ = run.apply(&Action { action, target });
            check_invariants(&run, score)?;
        }
    }
}
