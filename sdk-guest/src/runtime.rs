//! What a `no_std` component needs from its language runtime: a heap, a panic handler and the
//! `cabi_realloc` export the host calls to copy arguments in. Only on wasm32 without `std`.
//!
//! Why not Rust's `std`: on `wasm32-wasip2` it brings wasi-libc, whose stdio and environment
//! setup makes the component import about twenty WASI functions (trapped by the host) and adds
//! two glue core modules. The host instantiates every component once per tick, so that
//! machinery cost ~4 µs a tick while a strategy never uses it.
//!
//! Every tick runs in a fresh instance: the heap starts empty each time and nothing needs to be
//! returned to the host, but a tick may still allocate and free a lot, so the heap is a real
//! allocator (dlmalloc), not a bump pointer.
#![expect(
    unsafe_code,
    reason = "a global allocator, raw memory growth and the canonical ABI's realloc are unsafe by nature"
)]

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use dlmalloc::{Allocator, Dlmalloc};

const WASM_PAGE: usize = 64 * 1024;

unsafe extern "C" {
    /// First byte after the data segments and the stack, placed by the linker.
    static __heap_base: u8;
}

/// The system side of dlmalloc: first the unused tail of the component's initial memory, then
/// `memory.grow`.
///
/// The tail comes first because growing is the expensive path for a per-tick instance: the host
/// makes grown pages accessible (`mprotect`) and hides them again when the tick ends, twice a
/// tick. The tail of the initial memory (tens of KiB after the 1 MiB stack and the data) holds a
/// typical tick's allocations.
struct TailFirst {
    tail_given: AtomicBool,
}

// SAFETY: the methods follow dlmalloc's `Allocator` contract: `alloc` returns a region of at
// least `size` bytes that nothing else uses (the tail once, then freshly grown pages), regions
// are never released, and fresh wasm memory is zeroed.
unsafe impl Allocator for TailFirst {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        if !self.tail_given.swap(true, Ordering::Relaxed) {
            let base = (&raw const __heap_base) as usize;
            let end = wasm32::memory_size(0) * WASM_PAGE;
            if end > base && end - base >= size {
                return (base as *mut u8, end - base, 0);
            }
        }
        let pages = size.div_ceil(WASM_PAGE);
        let previous = wasm32::memory_grow(0, pages);
        if previous == usize::MAX {
            return (core::ptr::null_mut(), 0, 0);
        }
        ((previous * WASM_PAGE) as *mut u8, pages * WASM_PAGE, 0)
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        core::ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        true
    }

    fn page_size(&self) -> usize {
        // Smaller than a wasm page so the first request fits the tail; `alloc` still grows in
        // whole wasm pages and reports the real size.
        4096
    }
}

/// The component's global allocator.
struct Heap(UnsafeCell<Dlmalloc<TailFirst>>);

// SAFETY: a wasm32 component instance runs on one thread; nothing reaches the heap concurrently.
unsafe impl Sync for Heap {}

impl Heap {
    const fn new() -> Self {
        let mut dlmalloc = Dlmalloc::new_with_allocator(TailFirst {
            tail_given: AtomicBool::new(false),
        });
        // Request system memory in 4 KiB steps (the default is 64 KiB, larger than the tail).
        dlmalloc.set_granularity(4096);
        Heap(UnsafeCell::new(dlmalloc))
    }
}

// SAFETY: forwards to dlmalloc, which upholds `GlobalAlloc`'s contract; single-threaded (above).
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { (*self.0.get()).free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size) }
    }
}

#[global_allocator]
static HEAP: Heap = Heap::new();

/// The canonical ABI's allocation hook: the host calls it to place lists and strings in the
/// guest's memory before `on-tick`.
///
/// # Safety
/// Called by the host per the component model: `old_ptr`/`old_len`/`align` describe an earlier
/// allocation of this function (or `old_len == 0`), and `align` is a power of two.
#[unsafe(no_mangle)]
unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    use alloc::alloc::{alloc, handle_alloc_error, realloc};
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

/// A panic traps: the host records the tick as faulted (`trap`) and the next tick starts afresh.
///
/// The message is not logged: that would make every component import `host.log`, which costs
/// each tick ~2 µs whether or not anything panics. Strategies compile natively, where a test
/// shows the message.
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    wasm32::unreachable()
}

/// `memcmp`, which the compiler calls to compare byte strings it cannot unroll (a parameter's
/// name against another read at run time). `no_std` on `wasm32-wasip2` links no libc to provide
/// it, and `compiler_builtins` leaves it to libc there.
///
/// The reads are volatile so the optimiser cannot recognise this loop as a `memcmp` and call
/// itself.
///
/// # Safety
/// `a` and `b` point to at least `n` readable bytes each.
#[unsafe(no_mangle)]
unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i < n {
        let (x, y) = unsafe {
            (
                core::ptr::read_volatile(a.add(i)),
                core::ptr::read_volatile(b.add(i)),
            )
        };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

/// `bcmp`: `memcmp` when only equality matters (what `==` on slices calls).
///
/// # Safety
/// As [`memcmp`].
#[unsafe(no_mangle)]
unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { memcmp(a, b, n) }
}
