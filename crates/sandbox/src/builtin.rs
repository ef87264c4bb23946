//! The six class strategies (and the test guests), built by this crate's `build.rs` and embedded.

/// Class names with a built-in strategy, in the order the API lists the classes.
pub const BUILTIN_CLASSES: [&str; 6] =
    ["fighter", "ranger", "mage", "defender", "gambler", "rogue"];

static FIGHTER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strategy_fighter.wasm"));
static RANGER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strategy_ranger.wasm"));
static MAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strategy_mage.wasm"));
static DEFENDER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strategy_defender.wasm"));
static GAMBLER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strategy_gambler.wasm"));
static ROGUE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strategy_rogue.wasm"));
static HOSTILE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hostile_guest.wasm"));
static HOSTILE_STD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hostile_std_guest.wasm"));
static WRONG_WORLD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/wrong_world_guest.wasm"));
static MODEL_PROBE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/model_probe_guest.wasm"));
static V0_1: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/v0_1_guest.wasm"));
static OVERFIT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/overfit_guest.wasm"));
static ROBUST: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/robust_guest.wasm"));
static BAD_PARAMS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bad_params_guest.wasm"));

/// The component of a class's built-in strategy.
pub fn builtin_component(class: &str) -> Option<&'static [u8]> {
    match class {
        "fighter" => Some(FIGHTER),
        "ranger" => Some(RANGER),
        "mage" => Some(MAGE),
        "defender" => Some(DEFENDER),
        "gambler" => Some(GAMBLER),
        "rogue" => Some(ROGUE),
        _ => None,
    }
}

/// Test fixtures: `hostile` (misbehaves as its agent's personality says; `no_std` like the
/// built-in strategies), `hostile-std` (the same, linking Rust's `std`), `wrong-world`,
/// `model-probe` (asks the model as its personality says: `ask N`, `schema`, `spin`) and
/// `v0.1.0` (built against the archived `wit/v0.1.0` contract), `overfit` and `robust` (one
/// parameter each: a meaningless one and one with a real effect, for the optimiser) and
/// `bad-params` (a declaration the host refuses).
/// Shipped in the binary because they are small and let operators check a deployment's limits.
pub fn test_guest(name: &str) -> Option<&'static [u8]> {
    match name {
        "hostile" => Some(HOSTILE),
        "hostile-std" => Some(HOSTILE_STD),
        "wrong-world" => Some(WRONG_WORLD),
        "model-probe" => Some(MODEL_PROBE),
        "v0.1.0" => Some(V0_1),
        "overfit" => Some(OVERFIT),
        "robust" => Some(ROBUST),
        "bad-params" => Some(BAD_PARAMS),
        _ => None,
    }
}
