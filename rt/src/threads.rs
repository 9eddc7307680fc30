//! Thread registry: `pthread_create` interposition (in `csrc/interpose.c`), dense thread ids,
//! parent and creation stack, stack bounds for the frame-pointer walker.
//!
//! - Id 0 is the main thread; every other id is handed out by the creating thread, under the
//!   registry lock, *before* the real `pthread_create`, so ids follow creation order and the
//!   parent is known. A failed creation gives its id back when nothing was created after it
//!   (otherwise the id stays a hole and is left out of `snapshot`).
//! - OpenMP worker threads (libomp calls `pthread_create` through the PLT, which resolves to the
//!   executable's definition) are registered the same way.
//! - A thread started some other way gets an id lazily at its first call into the runtime
//!   (`current_id`), with no parent and no creation stack.
//! - Per-thread state lives in the C thread-local `tls` (initial-exec model, no destructor),
//!   so it is usable inside pthread-key destructors, signal handlers and after `fork`.
//! - Runtime threads (`spawn_internal`) carry the id [`INTERNAL`] and never record.

use crate::mem::SpinLock;

/// Id of runtime-internal threads (never in the registry).
pub const INTERNAL: u32 = u32::MAX - 1;

/// The definition's expansion in Rust (see threads/tls.rs): the calling thread's runtime
/// state, `Tls`, which is C's `struct profcc_tls`, and each field's offset for the layout test.
macro_rules! profcc_tls {
    ($($(#[doc = $doc:literal])* $name:ident: $ty:ty,)*) => {
        /// The calling thread's runtime state: `struct profcc_tls` of rt/csrc/interpose.c, both
        /// from one definition (threads/tls.rs).
        #[repr(C)]
        pub struct Tls {
            $($(#[doc = $doc])* pub $name: $ty,)*
        }
        #[cfg(test)]
        const TLS_OFFSETS: &[(&str, usize)] =
            &[$((stringify!($name), core::mem::offset_of!(Tls, $name)),)*];
    };
}
use core::ffi::c_void;
include!("threads/tls.rs");

extern "C" {
    fn profcc_tls() -> *mut Tls;
    fn profcc_stack_bounds_self(is_main: i32, lo: *mut usize, hi: *mut usize);
    fn profcc_spawn_internal(
        f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
        arg: *mut libc::c_void,
    ) -> i32;
}

/// The calling thread's runtime state.
#[inline]
pub fn tls() -> &'static mut Tls {
    unsafe { &mut *profcc_tls() }
}

/// Sets the re-entrancy guard for its lifetime (restores the previous value): allocations
/// made meanwhile by this thread (by the runtime or by libc on its behalf) are not recorded.
pub struct RtGuard(u32);
impl RtGuard {
    pub fn enter() -> RtGuard {
        let t = tls();
        let old = t.in_rt;
        t.in_rt = 1;
        RtGuard(old)
    }
}
impl Drop for RtGuard {
    fn drop(&mut self) {
        tls().in_rt = self.0;
    }
}

#[derive(Clone, Copy)]
pub(crate) struct Rec {
    id: u32,
    parent: Option<u32>,
    created_at: Option<u32>,
    start_routine: Option<u64>,
    failed: bool,
}

pub(crate) struct Registry {
    next: u32,
    recs: Vec<Rec>,
}

pub(crate) static REG: SpinLock<Registry> = SpinLock::new(Registry {
    next: 1,
    recs: Vec::new(),
});

fn is_main_thread() -> bool {
    unsafe { libc::syscall(libc::SYS_gettid) as i32 == libc::getpid() }
}

/// Program threads running now (registered and not yet ended; a thread started behind the
/// runtime's back is never seen to end): the allocator analysis's serial/parallel phase.
#[export_name = "profcc_live_threads"] // read by interpose.c (the allocator analysis's phase)
pub static LIVE: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);

fn set_bounds(main: bool) {
    LIVE.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    let t = tls();
    let (mut lo, mut hi) = (0usize, 0usize);
    let _g = RtGuard::enter(); // pthread_getattr_np allocates
    unsafe { profcc_stack_bounds_self(main as i32, &mut lo, &mut hi) };
    t.stack_lo = lo;
    t.stack_hi = hi;
    crate::analysis::thread_started(t.tid_plus1.wrapping_sub(1), lo as u64, hi as u64, main);
}

/// From the start trampoline when the thread ends: its start routine returned, it called
/// `pthread_exit` or it was cancelled (a cleanup handler).
#[no_mangle]
pub extern "C" fn profcc_thread_exiting() {
    LIVE.fetch_sub(1, core::sync::atomic::Ordering::Relaxed);
    crate::analysis::thread_exit();
}

/// Called once from `ensure_init`, on whichever thread initialises (normally the main thread
/// before or during the first allocation).
pub fn init_main_thread() {
    let _g = RtGuard::enter();
    current_id();
}

/// Dense id of the calling thread: 0 for the main thread, then in creation order.
/// Never allocates through the program's allocator; cheap after the first call of a thread.
#[inline]
pub fn current_id() -> u32 {
    let t = tls();
    if t.tid_plus1 != 0 {
        return t.tid_plus1.wrapping_sub(1);
    }
    register_lazily()
}

#[cold]
#[inline(never)]
fn register_lazily() -> u32 {
    let main = is_main_thread();
    let id = if main {
        0
    } else {
        let mut r = REG.lock();
        let id = r.next;
        r.next += 1;
        r.recs.push(Rec {
            id,
            parent: None,
            created_at: None,
            start_routine: None,
            failed: false,
        });
        id
    };
    tls().tid_plus1 = id + 1;
    set_bounds(main);
    id
}

/// Every thread seen so far (accesses left 0; `writer` fills them). Id 0 always appears.
pub fn snapshot() -> Vec<profcc_schema::Thread> {
    let _g = RtGuard::enter();
    let mut out = vec![profcc_schema::Thread {
        id: 0,
        parent: None,
        created_at: None,
        accesses: 0,
        start_routine: None,
    }];
    let recs: Vec<Rec> = REG.lock().recs.clone();
    for r in recs.iter().filter(|r| !r.failed) {
        out.push(profcc_schema::Thread {
            id: r.id,
            parent: r.parent,
            created_at: r.created_at,
            accesses: 0,
            start_routine: r.start_routine,
        });
    }
    out.sort_by_key(|t| t.id);
    out
}

/// Start a runtime-internal thread (not registered, not profiled, all signals blocked,
/// detached) with the real pthread_create. `arg` is only handed to `f`.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn spawn_internal(
    f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
) -> bool {
    unsafe { profcc_spawn_internal(f, arg) == 0 }
}

struct Start {
    f: unsafe extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
    id: u32,
}

/// From the `pthread_create` interposer (guard set): give the child its id, record parent and
/// creation stack, and return the start record the trampoline takes.
#[no_mangle]
pub unsafe extern "C" fn profcc_thread_prepare(
    f: unsafe extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
    fp: *mut libc::c_void,
) -> *mut libc::c_void {
    #[cfg(not(test))] // the unit-test binary is interposed too; it must not write profiles
    crate::ensure_init();
    let parent = current_id(); // also gives the walker this thread's stack bounds
    let stack = crate::stack::capture_from(fp);
    let id = {
        let mut r = REG.lock();
        let id = r.next;
        r.next += 1;
        r.recs.push(Rec {
            id,
            parent: if parent == INTERNAL {
                None
            } else {
                Some(parent)
            },
            created_at: Some(stack),
            start_routine: Some(f as usize as u64),
            failed: false,
        });
        id
    };
    crate::analysis::thread_coming();
    Box::into_raw(Box::new(Start { f, arg, id })) as *mut libc::c_void
}

/// In the new thread, before the user's start routine (guard set).
#[no_mangle]
pub unsafe extern "C" fn profcc_thread_started(
    rec: *mut libc::c_void,
    f: *mut unsafe extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut *mut libc::c_void,
) {
    let s = Box::from_raw(rec as *mut Start);
    tls().tid_plus1 = s.id + 1;
    set_bounds(false);
    crate::analysis::thread_begins();
    *f = s.f;
    *arg = s.arg;
}

/// The real `pthread_create` failed: give the id back if it is the newest one.
#[no_mangle]
pub unsafe extern "C" fn profcc_thread_failed(rec: *mut libc::c_void) {
    let s = Box::from_raw(rec as *mut Start);
    {
        let mut r = REG.lock();
        if r.next == s.id + 1 {
            r.next -= 1;
            r.recs.retain(|x| x.id != s.id);
        } else if let Some(x) = r.recs.iter_mut().find(|x| x.id == s.id) {
            x.failed = true;
        }
    }
    crate::analysis::thread_failed();
}

/// In the child after fork (locks released): the calling thread is the only one; the
/// others' records go (ids are not handed out again: `next` stays).
pub(crate) fn after_fork_child() {
    let me = tls().tid_plus1.wrapping_sub(1);
    REG.lock().recs.retain(|r| r.id == me);
    LIVE.store(1, core::sync::atomic::Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    /// `struct profcc_tls` as C lays it out is Rust's `Tls`: the generated header asserts each
    /// field's offset and the size as rt/build.rs computed them (a C compile of interpose.c
    /// fails otherwise); here those figures are the runtime's own, interpose.c takes the
    /// struct from the header, and the fields the fast paths read first keep their places.
    #[test]
    fn tls_layout_is_the_c_headers() {
        use super::{Tls, TLS_OFFSETS};
        let h = include_str!(concat!(env!("OUT_DIR"), "/profcc_tls.h"));
        let asserted: Vec<(&str, usize)> = h
            .lines()
            .filter_map(|l| l.strip_prefix("_Static_assert(offsetof(struct profcc_tls, "))
            .map(|l| {
                let (name, rest) = l.split_once(')').unwrap();
                let n = rest.trim_start_matches(" == ").split(',').next().unwrap();
                (name, n.parse().unwrap())
            })
            .collect();
        assert_eq!(asserted, TLS_OFFSETS);
        let size = format!(
            "sizeof(struct profcc_tls) == {},",
            core::mem::size_of::<Tls>()
        );
        assert!(h.contains(&size), "{h}");
        assert_eq!(
            TLS_OFFSETS[..4],
            [
                ("tid_plus1", 0),
                ("in_rt", 4),
                ("stack_lo", 8),
                ("stack_hi", 16)
            ]
        );
        let c = include_str!("../csrc/interpose.c");
        assert!(c.contains("#include \"profcc_tls.h\""));
        assert!(
            !c.contains("struct profcc_tls {"),
            "a copy of the struct in interpose.c"
        );
    }
}
