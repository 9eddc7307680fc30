//! Lines and pages holding live heap objects, for the utilisation of the memory the heap's
//! objects occupy (docs/allocators.md, "Utilisation").
//!
//! An object's interior lines (pages) hold nothing else, so only its first and last one can
//! be shared with other objects. Each thread keeps a running count of the lines and pages its
//! allocations added minus those its frees took away (`Cells::lines`, `Cells::pages`):
//! an object adds its span minus the edges that already held a live object, and its free
//! takes away its span minus the edges still holding another one. For lines, the edge
//! line's live objects are those of the allocator-induced sharing table ([`super::lines`]);
//! for pages, a shadow of one 16-bit live-object count per 4 KiB page of the user address
//! space (2^35 pages: 64 GiB reserved without swap, touched as the heap grows: 4 KiB of
//! counts per 8 MiB of heap).

use crate::alloc::PAGE;
use core::sync::atomic::{AtomicPtr, AtomicU16, Ordering::Relaxed};
/// Pages of the x86-64 user address space (47 bits).
const USER_PAGES: u64 = 1 << (47 - PAGE.trailing_zeros());

static SHADOW: AtomicPtr<AtomicU16> = AtomicPtr::new(core::ptr::null_mut());

/// Map the page shadow (left unmapped when the reservation fails: page counts are then None).
pub fn init() {
    let p = crate::mem::map(USER_PAGES as usize * 2, true);
    if !p.is_null() {
        SHADOW.store(p as *mut AtomicU16, Relaxed);
    }
}

/// The shadow is mapped: the allocator analysis counts lines and pages (init maps it only
/// when every object is recorded, so this is the one switch).
pub fn tracking() -> bool {
    !SHADOW.load(Relaxed).is_null()
}

/// The first and last `unit` (a power of two) of [start, start + size), and how many units it
/// spans.
pub fn span(start: u64, size: u64, unit: u64) -> (u64, u64, u64) {
    let first = start & !(unit - 1);
    let last = (start + size.max(1) - 1) & !(unit - 1);
    (first, last, (last - first) / unit + 1)
}

/// The first and the last `unit` of [start, start + size) (once when they are the same):
/// the only ones another object can share.
pub fn edges(start: u64, size: u64, unit: u64) -> impl Iterator<Item = u64> {
    let (first, last, _) = span(start, size, unit);
    core::iter::once(first).chain((last != first).then_some(last))
}

fn count(page: u64) -> Option<&'static AtomicU16> {
    let t = SHADOW.load(Relaxed);
    let i = page / PAGE;
    (!t.is_null() && i < USER_PAGES).then(|| unsafe { &*t.add(i as usize) })
}

/// Pages [start, start + size) adds to those holding live objects.
pub fn allocated(start: u64, size: u64) -> i64 {
    let mut added = span(start, size, PAGE).2 as i64;
    for p in edges(start, size, PAGE) {
        match count(p) {
            // Saturated (65535 live objects on one page cannot happen: 16-byte granules).
            Some(c) => added -= (c.fetch_add(1, Relaxed) != 0) as i64,
            None => return 0,
        }
    }
    added
}

/// Pages the free of [start, start + size) takes from those holding live objects (an object
/// whose first page has no count, allocated before the analysis started, takes none).
pub fn freed(start: u64, size: u64) -> i64 {
    let (first, _, n) = span(start, size, PAGE);
    let mut taken = n as i64;
    for p in edges(start, size, PAGE) {
        let Some(c) = count(p) else { return 0 };
        match c.fetch_update(Relaxed, Relaxed, |x| x.checked_sub(1)) {
            Ok(was) => taken -= (was > 1) as i64,
            Err(_) if p == first => return 0,
            Err(_) => taken -= 1,
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;
    use profcc_schema::sharing::LINE;

    #[test]
    fn pages_are_counted_once_however_many_objects_share_them() {
        init();
        assert!(tracking());
        let base = 0x6100_0000_0000u64;
        // Three objects on one page, one across the next two pages' boundary, one big.
        assert_eq!(allocated(base + 16, 40), 1);
        assert_eq!(allocated(base + 64, 40), 0);
        assert_eq!(allocated(base + 4000, 200), 1); // its first page is held already
        assert_eq!(allocated(base + 3 * PAGE + 8, 5 * PAGE), 6);
        assert_eq!(freed(base + 64, 40), 0);
        assert_eq!(freed(base + 16, 40), 0); // the third still holds it
        assert_eq!(freed(base + 4000, 200), 2);
        assert_eq!(freed(base + 3 * PAGE + 8, 5 * PAGE), 6);
        // Never seen: its count stays at 0.
        assert_eq!(freed(base + 100 * PAGE, 10), 0);
        assert_eq!(count(base + 100 * PAGE).unwrap().load(Relaxed), 0);
        assert_eq!(span(0x40, 64 * 10, LINE), (0x40, 0x40 + 64 * 9, 10));
        assert_eq!(span(0x48, 8, LINE), (0x40, 0x40, 1));
    }
}
