//! Test fixture: a strategy component built against `wit/v0.1.0` (`crucible:strategy@0.1.0`),
//! the contract before the model interface. It logs through `host@0.1.0` and buys a tenth of
//! equity with the reason `v0.1.0 <personality>`; the host must load and tick it unchanged.

#![cfg_attr(target_arch = "wasm32", no_std)]

#[cfg(target_arch = "wasm32")]
mod component {
    extern crate alloc;

    use alloc::format;
    use alloc::string::String;
    use alloc::vec;

    wit_bindgen::generate!({ path: "../../wit/v0.1.0", world: "strategy" });

    use crucible::strategy::host::{Level, log};
    use crucible::strategy::types::{Order, Side, Size};

    #[global_allocator]
    static HEAP: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

    #[panic_handler]
    fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
        core::arch::wasm32::unreachable()
    }

    /// The canonical ABI's allocation hook (wasip2's libc brings one only with `std`).
    ///
    /// # Safety
    /// Called by the host per the component model: `old_ptr`/`old_len`/`align` describe an
    /// earlier allocation of this function (or `old_len == 0`), and `align` is a power of two.
    #[expect(
        unsafe_code,
        reason = "the canonical ABI's realloc is an unsafe export"
    )]
    #[unsafe(no_mangle)]
    unsafe extern "C" fn cabi_realloc(
        old_ptr: *mut u8,
        old_len: usize,
        align: usize,
        new_len: usize,
    ) -> *mut u8 {
        use alloc::alloc::{Layout, alloc, handle_alloc_error, realloc};
        // SAFETY: per the contract above; a zero-sized request gets a dangling aligned pointer.
        unsafe {
            let ptr = if old_len == 0 {
                if new_len == 0 {
                    return align as *mut u8;
                }
                alloc(Layout::from_size_align_unchecked(new_len, align))
            } else {
                realloc(
                    old_ptr,
                    Layout::from_size_align_unchecked(old_len, align),
                    new_len,
                )
            };
            if ptr.is_null() {
                handle_alloc_error(Layout::from_size_align_unchecked(new_len, align));
            }
            ptr
        }
    }

    struct V01;

    impl Guest for V01 {
        fn on_tick(ctx: TickContext) -> Result<TickOutput, String> {
            log(Level::Info, "0.1.0 guest ticking");
            Ok(TickOutput {
                orders: vec![Order {
                    side: Side::Buy,
                    size: Size::FractionOfEquity(0.1),
                    reason: Some(format!("v0.1.0 {}", ctx.config.personality)),
                }],
                state: ctx.state,
            })
        }
    }

    export!(V01);
}
