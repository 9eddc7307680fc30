/* The allocator analysis's cells (rt/src/analyses/allocator.rs): every counted operation of
 * the program is filed here: its request size's bucket, whether its address is reused (the
 * reuse part of the granule table), and the phase make its cell, whose count goes up in the
 * thread's block (`Cells::ops` in rt/src/analyses/allocator.rs, which owns the tables below
 * and checks these layout constants in a unit test). profcc_alloc_op in Rust is called only
 * for what needs more: a timed call, a recorded object, counted events, the thread's first
 * call, a thread without a block. The interposers call `op_done` (the full path) and
 * `tail_cell` (the tail path, armed by `tail_arm_cells`).
 *
 * Part of rt/csrc/interpose.c's translation unit, like timing.h (included once, after it and
 * after the granule table's `granule`, GRANULE_BITS and REUSE_AT), so that it inlines into
 * the malloc family's hot path as if written there. */
#ifndef PROFCC_ALLOCATOR_CELLS_H
#define PROFCC_ALLOCATOR_CELLS_H

#define A_BUCKETS 64 /* the last one: size unknown */
#define A_RP 6       /* reuse (new, reused, unknown) x phase */
#define REUSE_UNKNOWN 2 /* a tail-path malloc's: its address is never seen */
#define A_CELL_WORDS 4 /* count, timed, weighted cycles, weight */
extern uint64_t profcc_alloc_edges[A_BUCKETS - 2];
extern uint32_t profcc_alloc_nedges;
extern uint32_t profcc_alloc_below_pow2[64];
extern uint8_t profcc_alloc_small_bucket[TIME_ALL_FROM];
extern uint32_t profcc_live_threads;

/* The bucket of an n-byte request: the number of bucket edges at or below n. */
static inline uint32_t bucket_of(uint64_t n) {
    if (LIKELY(n < TIME_ALL_FROM)) return __atomic_load_n(&profcc_alloc_small_bucket[n], __ATOMIC_RELAXED);
    uint32_t k = __atomic_load_n(&profcc_alloc_nedges, __ATOMIC_RELAXED);
    uint32_t i = n ? __atomic_load_n(&profcc_alloc_below_pow2[63 - __builtin_clzll(n)], __ATOMIC_RELAXED) : 0;
    while (i < k && __atomic_load_n(&profcc_alloc_edges[i], __ATOMIC_RELAXED) <= n) i++;
    return i;
}
uint32_t profcc_alloc_bucket(uint64_t n) { return bucket_of(n); }

/* Reuse: the granule's byte in the table's reuse part (see `granule`; the caller computes the
 * granule once per call, the filter reads its own byte) holds the granule's tag (bits
 * 4 + GRANULE_BITS and up of the address, 6 of them) and REUSE_FREED (the address was freed);
 * 0: nothing known. Granules 16 MiB apart share the byte: the later free pushes the earlier
 * out (its reuse then counts as new), and 64 windows apart the tags agree too (one may be
 * misfiled). Plain loads and stores, not an exchange: two threads freeing into one byte at
 * once may misfile one of the two. */
#define REUSE_FREED 1u
static inline uint8_t reuse_tag(uint64_t a) { return (uint8_t)((a >> (4 + GRANULE_BITS)) << 2); }
/* The block at `a` (its filter byte `g`, not null; its reuse byte is REUSE_AT further) is
 * freed: had the address been freed before, i.e. had this block come back from a free (its
 * free is a reused one)? */
static inline int freed_in(uint64_t a, uint8_t *g) {
    uint8_t *s = g + REUSE_AT;
    uint8_t was = __atomic_load_n(s, __ATOMIC_RELAXED), now = reuse_tag(a) | REUSE_FREED;
    if (LIKELY(was == now)) return 1;
    /* Stored only when it changes: most frees of a program that reuses its memory store
     * nothing. */
    __atomic_store_n(s, now, __ATOMIC_RELAXED);
    return 0;
}
/* The same with no table (`g` 0): nothing known, new. */
static inline int freed_mark(uint64_t a, uint8_t *g) { return g ? freed_in(a, g) : 0; }
/* A block at `a` (its filter byte `g`) was handed out: was the address freed before? (Read
 * only: the mark stays until another tag pushes it out, so the tail path, which never sees
 * the address a malloc returns, leaves the same state behind.) */
static inline int handed_out(uint64_t a, uint8_t *g) {
    return g && __atomic_load_n(g + REUSE_AT, __ATOMIC_RELAXED) == (uint8_t)(reuse_tag(a) | REUSE_FREED);
}

/* For the runtime's unit test of the reuse state (-1: no table). */
int profcc_reuse_freed(uint64_t a) {
    uint8_t *g = granule(a);
    return g ? freed_in(a, g) : -1;
}
int profcc_reuse_handed_out(uint64_t a) { return handed_out(a, granule(a)); }

/* The cell of operation `op` in size bucket `b` with reuse `reused` (0 new, 1 reused,
 * REUSE_UNKNOWN) in the current phase: its index in the thread's block, in cells. */
static inline uint32_t cell_at(uint32_t op, uint32_t b, uint32_t reused, uint32_t parallel) {
    return (op * A_BUCKETS + b) * A_RP + reused * 2 + parallel;
}
static inline uint32_t cell_of(uint32_t op, uint32_t b, uint32_t reused) {
    return cell_at(op, b, reused, __atomic_load_n(&profcc_live_threads, __ATOMIC_RELAXED) > 1);
}

/* The thread's block of cells, set and cleared by Rust (0: none; Rust files the calls). */
void profcc_alloc_set_cells(uint64_t *cells) {
    tail_sync();
    tls.alloc_cells = cells;
}

/* The program's counted operation `op` on `n` bytes returned (or freed) `p`; `old`,
 * `old_n`: realloc's old block and its recorded size (NO_SIZE: not recorded); `c`: its
 * ticks when timed; `site`: the object's site (NO_SITE: not recorded); `g`, `go`: p's and
 * old's granules (0: none). */
__attribute__((always_inline)) static inline void op_done(uint32_t op, size_t n, void *p, void *old, size_t old_n, uint64_t c,
                           const struct op_timer *t, uint32_t site, uint8_t *g, uint8_t *go) {
    int is_free = op == OP_FREE || op == OP_DELETE;
    uint32_t b = is_free && site == NO_SITE ? A_BUCKETS - 1 : bucket_of(n);
    int reused;
    if (is_free) {
        reused = freed_mark((uint64_t)p, g);
    } else if (!p) {
        reused = 0;
    } else {
        if (op == OP_REALLOC && old && old != p) freed_mark((uint64_t)old, go);
        reused = (op == OP_REALLOC && old == p) | handed_out((uint64_t)p, g);
    }
    uint32_t cell = cell_of(op, b, (uint32_t)reused);
    uint32_t flags = t->on & OP_EVENTS;
    if (UNLIKELY(!tls.alloc_seen)) {
        tls.alloc_seen = 1;
        flags |= OP_FIRST;
    }
    uint64_t *cells = tls.alloc_cells;
    if (LIKELY(cells != 0 && flags == 0 && !t->weight && site == NO_SITE &&
               (op != OP_REALLOC || old_n == NO_SIZE))) {
        cells[(size_t)cell * A_CELL_WORDS] += 1;
        return;
    }
    profcc_alloc_op(flags, cell, n, p, old_n, c, t->weight, site);
}

/* The tail path (interpose.c, "the tail path"): under the analysis, the most calls one arming
 * lets it take: they are filed in the phase (serial, parallel) the thread saw when it was
 * armed. */
#define TAIL_PHASE_CALLS 1024

/* The analysis's part of arming the tail path (interpose.c `tail_arm`, after `tail_sync`):
 * `*left` = the calls the tail path may take before one of the two countdowns runs out (at
 * most TAIL_PHASE_CALLS; UINT32_MAX with the analysis off), and `tls.tail_cells` the cells
 * it counts in. 0: not armed (the thread has no cells, or its first call is still to
 * come). */
static inline int tail_arm_cells(uint32_t *left) {
    *left = UINT32_MAX;
    if (!__atomic_load_n(&profcc_alloc_timing, __ATOMIC_RELAXED)) return 1;
    if (!tls.alloc_cells || !tls.alloc_seen) return 0;
    /* The phase is the arming's: its cells are the tail path's base (a cell's index is
     * linear in the phase, `cell_of`), for at most TAIL_PHASE_CALLS calls. */
    uint32_t parallel = __atomic_load_n(&profcc_live_threads, __ATOMIC_RELAXED) > 1;
    tls.tail_cells = tls.alloc_cells + (size_t)parallel * A_CELL_WORDS;
    *left = tls.time_left < tls.ev_countdown ? tls.time_left : tls.ev_countdown;
    if (*left > TAIL_PHASE_CALLS) *left = TAIL_PHASE_CALLS;
    return 1;
}

/* The cell of a tail-path call (`b` bucket, `reused` 0, 1 or REUSE_UNKNOWN; `cells`: the
 * thread's, moved to the arming's phase). */
static inline void tail_cell(uint64_t *cells, uint32_t op, uint32_t b, uint32_t reused) {
    cells[(size_t)cell_at(op, b, reused, 0) * A_CELL_WORDS] += 1;
}

#endif /* PROFCC_ALLOCATOR_CELLS_H */
