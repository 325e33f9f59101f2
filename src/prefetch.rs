//! A hint to the CPU to start loading a value it will need soon, so the engine's event loop
//! over thousands of threads does not stall on each thread's state coming from far memory.
//!
//! The only `unsafe` in the crate: the prefetch instruction takes a raw address. It never
//! reads or writes memory as the program sees it and cannot fault, even on a bad address;
//! here the address is always that of a live reference. Elsewhere than x86-64 it does nothing.

/// Ask for every cache line of `*value` to be loaded.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let start = (value as *const T).cast::<i8>();
        let size = std::mem::size_of::<T>();
        let mut offset = 0;
        while offset < size {
            // SAFETY: a prefetch is only a hint; it has no effect the program can observe and
            // does not fault, and `start + offset` lies within `*value`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += 64;
        }
        // The last line, when `*value` straddles one more than its size suggests.
        // SAFETY: as above; the last byte of `*value`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(size.saturating_sub(1))) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
