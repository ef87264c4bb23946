//! Test fixture: a well-formed component exporting `run`, not `on-tick`; the host must refuse it.

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({ path: "wit", world: "other" });

    struct Other;

    impl Guest for Other {
        fn run(input: u32) -> u32 {
            input.wrapping_mul(2)
        }
    }

    export!(Other);
}
