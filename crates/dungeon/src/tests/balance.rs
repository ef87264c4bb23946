//! Balance: the greedy scripted agent against the random one over many daily maps.

use super::*;
use crate::agent::{GreedyAgent, RandomAgent};
use crate::*;

#[derive(Debug, Default)]
struct Rates {
    cleared: u32,
    dead: u32,
    exhausted: u32,
    abandoned: u32,
    score: i64,
}

fn rates(n: u64, greedy: bool) -> Rates {
    let mut rates = Rates::default();
    for seed in 0..n {
        let map = DungeonMap::generate("balance", seed, seed as usize);
        let class = Class::ALL[(seed % 6) as usize];
        let run = if greedy {
            play(&map, class, seed, &mut GreedyAgent::new())
        } else {
            play(&map, class, seed, &mut RandomAgent::new(seed))
        };
        rates.score += run.score();
        match run.status() {
            RunStatus::Cleared => rates.cleared += 1,
            RunStatus::Dead => rates.dead += 1,
            RunStatus::Exhausted => rates.exhausted += 1,
            RunStatus::Abandoned => rates.abandoned += 1,
            RunStatus::Active => {}
        }
    }
    rates
}

#[test]
fn a_scripted_agent_sometimes_clears_and_a_random_one_almost_never_does() {
    const N: u64 = 300;
    let greedy = rates(N, true);
    let random = rates(N, false);
    println!("over {N} seeds: greedy {greedy:?}, random {random:?}");
    assert!(greedy.cleared * 100 >= 5 * N as u32, "greedy clears ≥ 5%");
    assert!(random.cleared * 100 < 5 * N as u32, "random clears < 5%");
    assert!(greedy.dead < random.dead, "greedy dies less often");
    assert!(
        greedy.dead + greedy.exhausted < random.dead + random.exhausted,
        "greedy fails less often"
    );
    assert!(greedy.score > 3 * random.score, "greedy scores far more");
    assert_eq!(
        greedy.abandoned, 0,
        "the greedy agent never loops on free actions"
    );
}
