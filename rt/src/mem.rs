//! The runtime's own memory: mmap-backed, never the program's allocator.
//!
//! `RtAlloc` is the global allocator of the runtime crate, so every `Vec`/`String` the
//! runtime builds comes from here. Small blocks come from per-size-class free lists carved
//! out of 1 MiB mmap chunks; blocks above 64 KiB are their own mapping.

use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, Ordering};

/// A spin lock that never allocates and never calls libc: usable inside malloc.
pub struct SpinLock<T> {
    locked: AtomicBool,
    value: core::cell::UnsafeCell<T>,
}

unsafe impl<T: Send> Sync for SpinLock<T> {}

pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: core::cell::UnsafeCell::new(value),
        }
    }
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let mut spins = 0u32;
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins > 64 {
                unsafe { libc::sched_yield() };
                spins = 0;
            } else {
                core::hint::spin_loop();
            }
        }
        SpinGuard { lock: self }
    }
    /// The value, for a caller that holds the lock with its guard forgotten (`fork.rs`).
    pub fn data_ptr(&self) -> *mut T {
        self.value.get()
    }
    /// Only for the child after `fork`: the parent's holder no longer exists.
    pub unsafe fn force_unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

impl<T> core::ops::Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        unsafe { &*self.lock.value.get() }
    }
}
impl<T> core::ops::DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        unsafe { &mut *self.lock.value.get() }
    }
}
impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

/// Map `len` bytes of zeroed anonymous memory; null on failure.
pub fn map(len: usize, noreserve: bool) -> *mut u8 {
    map_flags(len, if noreserve { libc::MAP_NORESERVE } else { 0 })
}

/// `map(len, false)` with its pages made resident now (`MAP_POPULATE`): touching them later
/// takes no page fault.
pub fn map_populated(len: usize) -> *mut u8 {
    map_flags(len, libc::MAP_POPULATE)
}

/// Private anonymous read-write memory with `flags` added (null: refused).
fn map_flags(len: usize, flags: i32) -> *mut u8 {
    let p = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            0usize,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1i64,
            0usize,
        )
    };
    if p < 0 && p > -4096 {
        core::ptr::null_mut()
    } else {
        p as *mut u8
    }
}

pub fn unmap(p: *mut u8, len: usize) {
    unsafe {
        libc::syscall(libc::SYS_munmap, p as usize, len);
    }
}

const CLASSES: usize = 13; // 16 B .. 64 KiB
const CHUNK: usize = 1 << 20;

pub(crate) struct Heap {
    free: [*mut u8; CLASSES],
    bump: *mut u8,
    end: *mut u8,
}
unsafe impl Send for Heap {}

pub(crate) static HEAP: SpinLock<Heap> = SpinLock::new(Heap {
    free: [core::ptr::null_mut(); CLASSES],
    bump: core::ptr::null_mut(),
    end: core::ptr::null_mut(),
});

fn class_of(size: usize) -> usize {
    let s = size.max(16).next_power_of_two();
    s.trailing_zeros() as usize - 4
}

pub struct RtAlloc;

unsafe impl GlobalAlloc for RtAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let size = layout.size().max(layout.align());
        if size > (16 << (CLASSES - 1)) || layout.align() > 4096 {
            return map(round_page(size), false);
        }
        let c = class_of(size);
        let bsize = 16usize << c;
        let mut h = HEAP.lock();
        let head = h.free[c];
        if !head.is_null() {
            h.free[c] = *(head as *mut *mut u8);
            return head;
        }
        // Blocks are aligned to their size (power of two) within the chunk.
        let mut p = ((h.bump as usize + bsize - 1) & !(bsize - 1)) as *mut u8;
        if h.bump.is_null() || p as usize + bsize > h.end as usize {
            let chunk = map(CHUNK, false);
            if chunk.is_null() {
                return chunk;
            }
            h.bump = chunk;
            h.end = chunk.add(CHUNK);
            p = chunk;
        }
        h.bump = p.add(bsize);
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let size = layout.size().max(layout.align());
        if size > (16 << (CLASSES - 1)) || layout.align() > 4096 {
            unmap(ptr, round_page(size));
            return;
        }
        let c = class_of(size);
        let mut h = HEAP.lock();
        *(ptr as *mut *mut u8) = h.free[c];
        h.free[c] = ptr;
    }
}

fn round_page(n: usize) -> usize {
    (n + 4095) & !4095
}

/// Map `size` bytes of zero pages at exactly `addr` (read-write, `MAP_NORESERVE`: address
/// space only), never over an existing mapping (`MAP_FIXED_NOREPLACE`). Err(errno) when the
/// kernel refused or (before Linux 4.17, which takes the address as a hint) put it
/// elsewhere, in which case it is unmapped again. The shadows' reservation (line and page).
pub fn map_fixed_zero(addr: u64, size: u64) -> Result<(), i32> {
    const MAP_FIXED_NOREPLACE: i32 = 0x100000;
    let p = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            addr as usize,
            size as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | MAP_FIXED_NOREPLACE,
            -1i64,
            0usize,
        )
    };
    // `syscall` returns -1 and leaves the error in errno (read it before munmap can change it).
    let errno = if p == -1 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    } else {
        0
    };
    if p as u64 == addr {
        return Ok(());
    }
    if p > 0 {
        unsafe { libc::syscall(libc::SYS_munmap, p as usize, size as usize) };
    }
    Err(errno)
}
