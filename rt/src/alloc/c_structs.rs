// The structs the allocation path's C half (rt/csrc/interpose.c) and Rust share, each defined
// once here, in one `profcc_c_structs!` invocation with three expansions:
// - rt/src/alloc/stats.rs: `SampleHead` (its fields as relaxed atomics), the head of `Block`;
// - rt/src/alloc.rs: `Obj`;
// - rt/build.rs: `profcc_alloc.h` in OUT_DIR, which interpose.c includes: each C struct, then
//   a `_Static_assert` of each field's offset and of the size as Rust lays them out, so a
//   field whose C and Rust layouts differ fails the build (the unit test
//   `alloc_layout_is_the_c_headers` checks the header's figures against the runtime's own).
// Each entry is `c_name: RustName { field: type, ... }`; a type is one of u32, u64, i64
// (rt/build.rs spells them in C: uint32_t, uint64_t, int64_t).

profcc_c_structs! {
    /// Sampling's per-thread counts, the head of the thread's statistics block
    /// (rt/src/alloc/stats.rs `Block`): interpose.c's fast paths count an allocation that
    /// records nothing and a free the filter clears here, without a call into Rust.
    sample_head: SampleHead {
        /// Bytes until the next recorded allocation (owner only).
        left: i64,
        /// The sampling generator's state (0: not seeded yet; owner only).
        rng: u64,
        /// The thread's share of the totals.
        allocations: u64,
        frees: u64,
        bytes: u64,
    }
    /// A thread's counts of one site's blocks that sampling did not pick, not yet in its
    /// statistics block's entries (rt/src/alloc/stats.rs, "Counts of unpicked blocks"):
    /// interpose.c counts a block with a start word here when it allocates or frees it.
    count_entry: CountEntry {
        /// Site index + 1; 0: unused.
        site_plus1: u32,
        /// The largest block counted.
        max_size: u32,
        allocs: u64,
        bytes: u64,
        frees: u64,
        freed: u64,
    }
    /// One live object (an entry of the object map; `profcc_take` hands one to interpose.c,
    /// which gives it back with `profcc_account_free` or `profcc_put_back`).
    profcc_obj: Obj {
        addr: u64,
        size: u64,
        site: u32,
        tid: u32,
        /// The allocating thread's allocation clock just after this allocation (its count of
        /// allocation calls, stats.rs `clock`); 0: unknown (no lifetime is measured).
        born: u64,
    }
}
