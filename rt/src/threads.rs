//! Thread registry: `pthread_create` interposition, dense thread ids. (stub: being written)

pub fn init_main_thread() {}

/// Dense id of the calling thread: 0 for the main thread, then in creation order.
pub fn current_id() -> u32 {
    0
}

/// Every thread seen so far (accesses left 0; `writer` fills them).
pub fn snapshot() -> Vec<profcc_schema::Thread> {
    Vec::new()
}

/// Start a runtime-internal thread (not registered, not profiled) with the real pthread_create.
pub fn spawn_internal(f: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void, arg: *mut libc::c_void) -> bool {
    let _ = (f, arg);
    false
}
