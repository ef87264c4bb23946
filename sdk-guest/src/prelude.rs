//! What a strategy uses every day, for `no_std` crates: `use crucible_sdk::prelude::*;`.

pub use crate::{
    ChoiceParam, Context, FloatParam, IntParam, Level, Order, ParamSpec, ParamValue, Side, Size,
    Strategy, costs, indicators, log,
};
pub use alloc::borrow::ToOwned;
pub use alloc::boxed::Box;
pub use alloc::format;
pub use alloc::string::{String, ToString};
pub use alloc::vec;
pub use alloc::vec::Vec;
