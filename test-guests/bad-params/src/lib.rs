//! Test fixture: a 0.3.0 strategy whose declaration the host must refuse at upload (a
//! parameter declared twice, and a default outside its range).

#![cfg_attr(target_arch = "wasm32", no_std)]

use crucible_sdk::prelude::*;

const PERIOD: IntParam = IntParam::new("period", "a period", 2, 50, 14);
const TWICE: IntParam = IntParam::new("period", "the same name again", 2, 50, 99);

pub struct BadParams;

impl Strategy for BadParams {
    type State = ();

    fn params() -> Vec<ParamSpec> {
        vec![PERIOD.spec(), TWICE.spec()]
    }

    fn on_tick(_ctx: &Context, _state: &mut ()) -> Result<Vec<Order>, String> {
        Ok(Vec::new())
    }
}

crucible_sdk::export!(BadParams);
