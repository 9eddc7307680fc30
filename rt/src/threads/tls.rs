// The per-thread state the runtime's C and Rust halves share: `struct profcc_tls` (the
// initial-exec thread-local `tls` of rt/csrc/interpose.c) and `threads::Tls`. This file is its
// one definition, a `profcc_tls!` invocation with two expansions:
// - rt/src/threads.rs: the Rust struct `Tls` (#[repr(C)]);
// - rt/build.rs: `profcc_tls.h` in OUT_DIR, which interpose.c includes: the C struct, then a
//   `_Static_assert` of each field's offset and of the size as Rust lays them out, so a
//   field whose C and Rust layouts differ fails the build (the unit test
//   `tls_layout_is_the_c_headers` checks the header's figures against the runtime's own).
// A field's type is written in Rust; rt/build.rs spells it in C: u32 -> uint32_t,
// u64 -> uint64_t, usize -> uintptr_t, *mut T -> T *, c_void -> void, [T; N] -> T name[N]
// (N a constant below, PROFCC_N in C), an opaque type below -> struct its_snake_case_name.
// The inlined fast paths and the frame-pointer walker read the first fields: keep the order.

/// Mutexes of the allocator the thread keeps hold times of at once (`held`, `held_at`).
pub const TLS_HELD: usize = 4;

/// C's `struct sample_head` (one definition in rt/src/alloc/c_structs.rs: alloc::stats's
/// `SampleHead`, the head of its `Block`; only a pointer to it is here).
pub enum SampleHead {}

profcc_tls! {
    /// Dense thread id + 1; 0: not registered yet.
    tid_plus1: u32,
    /// The re-entrancy guard.
    in_rt: u32,
    /// Bounds of this thread's stack, for the frame-pointer walker.
    stack_lo: usize,
    stack_hi: usize,
    /// The allocator operation whose real call runs (its OP_ + 1; 0: none), so the mmap
    /// family and the mutex see the allocator's own calls (the allocator analysis's
    /// channels).
    alloc_op: u32,
    /// Mutexes the allocator took inside the current operation and when (hold times).
    nheld: u32,
    /// Operations before the next one whose events are counted (alloc_events), and whether
    /// the current one's are.
    ev_countdown: u32,
    ev_on: u32,
    rng: u32,
    /// Counted operations before the next timed one (alloc_time), the period that gap was
    /// drawn with (the calls the next timed one stands for), and the thread's draws (their
    /// count sets the period, `time_next`).
    time_left: u32,
    time_weight: u32,
    time_draws: u32,
    /// The thread made its first counted operation (the allocator's set-up, not timed).
    alloc_seen: u32,
    /// The allocator analysis's cells of this thread (see op_done; 0: none).
    alloc_cells: *mut u64,
    /// The thread's sampling counters (see on_alloc; 0: none).
    sblock: *mut SampleHead,
    held: [*mut c_void; TLS_HELD],
    held_at: [u64; TLS_HELD],
    /// The last call that took the tail path (see `tail_inside`): the address of its
    /// return-address slot with its OP_ + 1 in the low three bits (the slot is 8-aligned;
    /// the op is read by the channels when the allocator analysis is on), and the return
    /// address the slot held. One store fewer per call than a word of its own.
    tail_slot: usize,
    tail_ra: *mut c_void,
    /// A tail-path new[] ran since the last operator new: an operator new at its marked
    /// slot is the one libstdc++'s new[] jumps to (see _Znwm).
    tail_array: u32,
    /// The tail path's ready word (see `tail_arm`): the calls it may still take before the
    /// full path runs (0: none), the value it was armed with, and the cells it counts in
    /// (0: the allocator analysis is off).
    tail_left: u32,
    tail_base: u32,
    tail_cells: *mut u64,
}
