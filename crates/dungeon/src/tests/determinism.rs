//! Same map, class, run seed and actions → the same states, events and replays.

use super::*;
use crate::agent::{Agent, GreedyAgent};
use crate::*;

fn transcript(map: &DungeonMap, class: Class, seed: u64, actions: &[Action]) -> Vec<String> {
    let mut run = Run::new(map, class, seed);
    let mut out = vec![serde_json::to_string(&run.view()).unwrap_or_default()];
    for action in actions {
        let result = match run.apply(action) {
            Ok(outcome) => serde_json::to_string(&outcome).unwrap_or_default(),
            Err(err) => err.to_string(),
        };
        out.push(result);
        out.push(serde_json::to_string(&run.view()).unwrap_or_default());
    }
    out
}

fn greedy_actions(map: &DungeonMap, class: Class, seed: u64) -> Vec<Action> {
    let mut run = Run::new(map, class, seed);
    let mut agent = GreedyAgent::new();
    let mut actions = Vec::new();
    while !run.status().is_over() {
        let action = agent.decide(&run.view());
        let _ = run.apply(&action);
        actions.push(action);
    }
    actions
}

#[test]
fn same_seed_class_and_actions_give_identical_states_and_replays() {
    for seed in 0..20 {
        let map = DungeonMap::generate("det", seed, seed as usize);
        let class = Class::ALL[seed as usize % 6];
        let actions = greedy_actions(&map, class, seed);
        let a = transcript(&map, class, seed, &actions);
        let b = transcript(
            &DungeonMap::generate("det", seed, seed as usize),
            class,
            seed,
            &actions,
        );
        assert_eq!(a, b);
        let live = {
            let mut run = Run::new(&map, class, seed);
            for action in &actions {
                let _ = run.apply(action);
            }
            run
        };
        assert_eq!(Run::replay(&map, class, seed, &actions), live);
    }
}

#[test]
fn a_run_survives_a_serde_round_trip_and_continues_identically() {
    let map = DungeonMap::for_date(2026, 11, 23, "salt");
    let actions = greedy_actions(&map, Class::Defender, 77);
    let half = actions.len() / 2;
    let mut run = Run::replay(&map, Class::Defender, 77, &actions[..half]);
    let json = serde_json::to_string(&run).expect("serialize");
    let mut restored: Run = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(restored, run);
    for action in &actions[half..] {
        assert_eq!(restored.apply(action), run.apply(action));
    }
    assert_eq!(restored, run);
}

#[test]
fn run_seeds_vary_the_dice_but_not_the_map() {
    let map = DungeonMap::generate("seeds", 5, 0);
    let scores: std::collections::BTreeSet<i64> = (0..10)
        .map(|seed| play(&map, Class::Fighter, seed, &mut GreedyAgent::new()).score())
        .collect();
    assert!(scores.len() > 1);
}
