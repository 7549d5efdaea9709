//! The server's allocator: mimalloc, called as C programs call it.
//!
//! The `mimalloc` crate's `GlobalAlloc` passes every request to
//! `mi_malloc_aligned`, whose fast path only serves blocks up to 1 KiB and
//! sends larger ones through the aligned slow path; a create makes ~590
//! allocations. Every mimalloc block is aligned to at least a machine word
//! (its smallest block is one word, and block sizes are multiples of it), so
//! a layout aligned to no more than that is served by `mi_malloc` and
//! `mi_realloc`, as Rust's own `System` allocator serves those with `malloc`.
//! Stricter alignments keep the aligned entry points.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Alignment every mimalloc block has (`MI_INTPTR_SIZE`).
const WORD: usize = std::mem::size_of::<usize>();

pub struct MiMalloc;

unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation functions take any size; the aligned
        // one any power-of-two alignment, which a `Layout` holds.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the trait's contract).
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (the trait's
        // contract); the block keeps the alignment it was allocated with.
        unsafe {
            if layout.align() <= WORD {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of every size class and alignment come back aligned, hold their
    /// bytes through a `realloc` that grows and shrinks them, and zeroed ones
    /// are zero.
    #[test]
    fn blocks_are_aligned_and_keep_their_bytes() {
        let a = MiMalloc;
        for size in [
            1usize,
            7,
            8,
            9,
            24,
            40,
            100,
            1000,
            1025,
            5000,
            70_000,
            2 << 20,
        ] {
            for align in [1usize, 2, 8, 16, 64, 4096] {
                let layout = Layout::from_size_align(size, align).unwrap();
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    p.write_bytes(0xAB, size);
                    let grown = a.realloc(p, layout, size * 3);
                    assert_eq!(grown as usize % align, 0);
                    assert!((0..size).all(|i| *grown.add(i) == 0xAB));
                    let shrunk = a.realloc(
                        grown,
                        Layout::from_size_align(size * 3, align).unwrap(),
                        size,
                    );
                    assert_eq!(shrunk as usize % align, 0);
                    assert!((0..size).all(|i| *shrunk.add(i) == 0xAB));
                    a.dealloc(shrunk, layout);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
