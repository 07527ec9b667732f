//! The global allocator: mimalloc, called the way its own malloc is.
//!
//! Query execution allocates many small short-lived values (rows, keys,
//! terms); mimalloc serves them several times faster than glibc's malloc.
//! The `mimalloc` crate's `MiMalloc` sends every request, whatever its
//! alignment, through `mi_malloc_aligned`, whose generic path (taken
//! whenever a page's free list needs refilling) costs several times
//! `mi_malloc`'s: measured with callgrind on a 3-pattern join, over half of
//! all allocations took it. Every mimalloc block is aligned to at least 8
//! bytes (its smallest size class is a machine word), so requests aligned
//! to 8 or less go to the plain functions, and only wider alignments pay
//! for the aligned ones.

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// Alignment every block from `mi_malloc` has.
const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

pub struct Mimalloc;

/// A block for `layout` from `plain` when its alignment allows, else from
/// `aligned` (mimalloc's pairs: malloc, zalloc).
#[inline]
unsafe fn by_alignment(
    layout: Layout,
    plain: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    if layout.align() <= PLAIN_ALIGN {
        plain(layout.size()) as *mut u8
    } else {
        aligned(layout.size(), layout.align()) as *mut u8
    }
}

unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        by_alignment(layout, mi_malloc, mi_malloc_aligned)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        by_alignment(layout, mi_zalloc, mi_zalloc_aligned)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= PLAIN_ALIGN {
            mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

/// Turns transparent huge pages off for this process (what mimalloc does
/// itself when `MIMALLOC_ALLOW_THP=0`; a user's own `MIMALLOC_ALLOW_THP`
/// wins). mimalloc asks for huge pages on its 1 GiB arenas, and purges
/// memory a few milliseconds after it is freed; the next big allocation
/// there faults in and zeroes a fresh 2 MiB page. Measured on the Pokec
/// store after 100,000 writes (bench/measured-changes.md, "Huge pages off"): those
/// faults were 29% of the server's time on 2-hop walks, whose answers
/// allocate megabytes per request.
pub fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alignment up to a page, at sizes around the size class
    /// boundaries, comes back aligned, zeroed where asked, and keeps its
    /// bytes through a growing and a shrinking realloc.
    #[test]
    fn blocks_are_aligned_and_keep_their_bytes() {
        let a = Mimalloc;
        let mut align = 1;
        while align <= 4096 {
            for size in [
                1usize, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 100, 1000, 5000, 70000,
            ] {
                let layout = Layout::from_size_align(size, align).unwrap();
                let aligned = |p: *mut u8, what: &str| {
                    assert!(
                        !p.is_null() && p as usize % align == 0,
                        "{what}: size {size} align {align}"
                    )
                };
                unsafe {
                    let z = a.alloc_zeroed(layout);
                    aligned(z, "alloc_zeroed");
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|b| *b == 0));
                    a.dealloc(z, layout);

                    let p = a.alloc(layout);
                    aligned(p, "alloc");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = a.realloc(p, layout, size * 3);
                    aligned(grown, "realloc up");
                    let shrunk = a.realloc(
                        grown,
                        Layout::from_size_align(size * 3, align).unwrap(),
                        size.div_ceil(2),
                    );
                    aligned(shrunk, "realloc down");
                    assert!(
                        (0..size.div_ceil(2)).all(|i| *shrunk.add(i) == i as u8),
                        "bytes kept: size {size} align {align}"
                    );
                    a.dealloc(
                        shrunk,
                        Layout::from_size_align(size.div_ceil(2), align).unwrap(),
                    );
                }
            }
            align *= 2;
        }
    }
}
