/* The allocator analysis's timing (rt/src/analyses/allocator.rs): which of the program's
 * allocator calls have their allocator time read (two TSC reads around the real call: one
 * call in `alloc_time`, the gap doubling after every TIME_LEVEL_DRAWS timed calls up to
 * 1 << TIME_MAX_SHIFT times, each timed call weighted by its gap; every request of
 * TIME_ALL_FROM bytes or more) and which have their events counted (`alloc_events`), the two
 * per-thread countdowns that decide it, and the operation's mark for the channels
 * (`tls.alloc_op`). The interposers call `timing_start` before the real call,
 * `timing_end` after it, then `counted` and cells.h's `op_done`.
 *
 * Part of rt/csrc/interpose.c's translation unit, not a header of its own: interpose.c
 * includes it once (after the per-thread state `tls`, LIKELY/UNLIKELY and the Rust side's
 * declarations), so that these functions inline into the malloc family's hot path as if
 * written there: the interposers' machine code is what it was with this code in interpose.c
 * (the tail path calls none of it; the full path calls only `tail_sync`, `time_next`,
 * `events_begin` and `late_first` out of line). It defines the analysis's switches, which
 * its init sets (`profcc_alloc_timing` and the periods). */
#ifndef PROFCC_ALLOCATOR_TIMING_H
#define PROFCC_ALLOCATOR_TIMING_H

/* The operations, in the order of the analysis's `OP_NAMES` (a unit test there reads this
 * line): */
enum { OP_MALLOC, OP_CALLOC, OP_REALLOC, OP_FREE, OP_NEW, OP_DELETE, OP_ALIGNED };
/* The channels an allocator's own calls go through, in the order of `CHANNEL_NAMES`: */
enum {
    CH_MMAP, CH_MUNMAP, CH_MREMAP, CH_MUTEX, CH_MUTEX_WAIT, CH_MUTEX_TRY, CH_MUTEX_BUSY,
    CH_MUTEX_HOLD, CH_MADVISE, CH_MPROTECT, CH_SBRK
};
/* Set once by the analysis's init when it is on (read relaxed on every program call). */
uint32_t profcc_alloc_timing;
/* alloc_time: one program operation in about this many per thread has its allocator time
 * read (1: every one; set by the analysis's init); a request of TIME_ALL_FROM bytes or more
 * always has (`TIME_ALL_FROM` in schema/src/allocator.rs; a unit test there checks this). */
uint32_t profcc_alloc_time_period = 1;
#define TIME_ALL_FROM 4096
/* alloc_events: one program operation in this many per thread has its events counted (0:
 * none; rt/src/analyses/allocator/events.rs). */
uint32_t profcc_alloc_event_period;
void profcc_alloc_events_begin(void);
void profcc_alloc_events_end(void);

/* The thread's xorshift32 (seeded from its TLS address): the gaps between sampled calls. */
static inline uint32_t tls_rand(void) {
    uint32_t x = tls.rng ? tls.rng : (uint32_t)(uintptr_t)&tls | 1;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    tls.rng = x;
    return x;
}

/* A gap drawn from [0, 2 x period - 2]: with a countdown that fires at 0, one call in
 * `period` on average, and a loop whose calls repeat with the period's length (malloc/free
 * pairs) is sampled in every phase. */
static inline uint32_t gap(uint32_t period) {
    /* (a multiply, not a division: a division costs a timed malloc as much as the call) */
    return period > 1 ? (uint32_t)(((uint64_t)tls_rand() * (2 * (uint64_t)period - 1)) >> 32) : 0;
}

/* Draw the operations before the next one whose events are counted; returns the period
 * (0: events off, the countdown then never runs out in practice). */
static uint32_t ev_rearm(void) {
    uint32_t period = __atomic_load_n(&profcc_alloc_event_period, __ATOMIC_RELAXED);
    tls.ev_countdown = period ? gap(period) : UINT32_MAX;
    return period;
}

/* The events countdown ran out: count this operation's events (guard set), start the next. */
__attribute__((noinline, cold)) static void events_begin(void) {
    if (ev_rearm()) {
        tls.ev_on = 1;
        profcc_alloc_events_begin();
    }
}

/* The timing gap's growth (profcc_schema::allocator::TIME_LEVEL_DRAWS, TIME_MAX_SHIFT): the
 * period is alloc_time for a thread's first TIME_LEVEL_DRAWS gaps, doubled for each further
 * as many, up to alloc_time << TIME_MAX_SHIFT. A loop of millions of calls pays for a few
 * thousand timed ones (two TSC reads cost 18 ns on this project's 2-core VM, as much as three
 * native malloc/free pairs), a short run or a rare kind keeps one in alloc_time. */
#define TIME_LEVEL_DRAWS 256
#define TIME_MAX_SHIFT 4
/* The timing countdown ran out: this call is timed; it stands for the calls of the gap that
 * ran out (the period it was drawn with; returned). Draws the next gap. */
__attribute__((noinline)) static uint32_t time_next(void) {
    uint32_t weight = tls.time_weight ? tls.time_weight : 1;
    uint64_t period = __atomic_load_n(&profcc_alloc_time_period, __ATOMIC_RELAXED);
    if (period > 1) {
        uint32_t level = tls.time_draws / TIME_LEVEL_DRAWS;
        if (level < TIME_MAX_SHIFT)
            tls.time_draws++;
        else
            level = TIME_MAX_SHIFT;
        period <<= level;
        if (period > UINT32_MAX / 2) period = UINT32_MAX / 2;
    }
    tls.time_weight = period ? (uint32_t)period : 1;
    tls.time_left = gap((uint32_t)period);
    return weight;
}

/* What C's counting leaves to Rust (rt/src/analyses/allocator.rs): the program's operation
 * filed in `cell` (see op_done; the operation is the cell's first index), with `flags`
 * (OP_EVENTS | OP_FIRST), on `n` bytes at `p`;
 * `old_n`: realloc's old block's size (NO_SIZE: not recorded); `cycles`: when the call was
 * timed, the raw interval between the two TSC reads around it (`timing_end`: the timer's own
 * cost included, and a TSC that ran backwards wrapped), standing for `weight` calls (0: not
 * timed); the Rust side (`call_ticks` in rt/src/analyses/allocator.rs) takes the empty
 * bracket's cost off and leaves out interrupted calls; `site`: the object's allocation site
 * (NO_SITE: not recorded). */
void profcc_alloc_op(uint32_t flags, uint32_t cell, size_t n, void *p, size_t old_n,
                     uint64_t cycles, uint32_t weight, uint32_t site);
#define NO_SIZE ((size_t)-1)
/* An allocator call ran through channel `ch` for `cycles` ticks inside operation `op`; `m`:
 * the mutex of a CH_MUTEX* call (also counted per mutex), else 0. */
void profcc_alloc_channel(uint32_t ch, uint32_t op, uint64_t cycles, const void *m);

/* The tail path's calls since it was armed (see `tail_arm`) move the two countdowns; it is
 * disarmed until the next `tail_arm`. */
static inline void tail_sync(void) {
    uint32_t used = tls.tail_base - tls.tail_left;
    if (tls.tail_cells) {
        tls.time_left -= used;
        tls.ev_countdown -= used;
    }
    tls.tail_left = tls.tail_base = 0;
    tls.tail_cells = 0;
}

/* profcc_alloc_op's `flags` bits (EVENTS_BIT and FIRST_BIT in rt/src/analyses/allocator.rs):
 * this operation's events were counted; it is the thread's first. */
#define OP_EVENTS (1u << 8)
#define OP_FIRST (1u << 9)
/* One program operation as the analysis sees it: `on` (counted: the analysis is on and the
 * call is the program's; | OP_EVENTS: its events were counted), `weight` (timed, standing
 * for this many calls; 0: not timed), its start tick. */
struct op_timer {
    uint64_t t0;
    uint32_t weight, on;
};

/* Start the program's operation `op` of `n` request bytes (0: unknown; `outer`: the guard's
 * value on entry; a call made inside the runtime, an allocator or new/delete is not the
 * program's). */
static inline struct op_timer timing_start(uint32_t outer, uint32_t op, size_t n) {
    struct op_timer t = {0, 0, 0};
    if (LIKELY(outer) || !__atomic_load_n(&profcc_alloc_timing, __ATOMIC_RELAXED)) return t;
    tail_sync();
    t.on = 1;
    tls.alloc_op = op + 1;
    if (UNLIKELY(tls.ev_countdown-- == 0)) {
        events_begin();
        if (tls.ev_on) t.on |= OP_EVENTS;
    }
    if (n >= TIME_ALL_FROM)
        t.weight = 1;
    else if (UNLIKELY(tls.time_left-- == 0))
        t.weight = time_next();
    else
        return t;
    t.t0 = __builtin_ia32_rdtsc();
    return t;
}
/* The raw TSC interval since the start, the two reads' own cost included (0: not timed; at
 * least 1 when timed); `profcc_alloc_op`'s `cycles`. */
static inline uint64_t timing_end(const struct op_timer *t) {
    if (!t->on) return 0;
    uint64_t c = 0;
    if (t->weight) {
        c = __builtin_ia32_rdtsc() - t->t0;
        c += !c; /* a timed call is never 0 ticks */
    }
    tls.alloc_op = 0;
    tls.nheld = 0; /* a lock the operation left held is not timed further */
    if (UNLIKELY(tls.ev_on)) {
        tls.ev_on = 0;
        profcc_alloc_events_end();
    }
    return c;
}

/* Whether the program's operation is counted (`t` from timing_start). The analysis never
 * turns off, so an uncounted operation of a thread that has counted none yet, finding it on,
 * began before it was: the call that starts the runtime (the process's first allocation,
 * often a library's constructor). It is counted, as the thread's first operation (untimed:
 * op_done finds `alloc_seen` unset), so the core's totals are the operations and the first
 * calls, and the object's bytes, when it recorded one, are in the analysis's memory split
 * like every other live object's. (A realloc moving a block out of the bootstrap pool is
 * uncounted on purpose: its caller does not ask.) */
__attribute__((noinline, cold)) static int late_first(struct op_timer *t) {
    /* The countdowns a first operation draws (left at 0, the next operation would always be
     * timed and have its events counted). */
    ev_rearm();
    time_next();
    t->on = 1;
    return 1;
}
static inline int counted(struct op_timer *t) {
    if (LIKELY(t->on)) return 1;
    if (LIKELY(tls.alloc_seen) || LIKELY(!__atomic_load_n(&profcc_alloc_timing, __ATOMIC_RELAXED)))
        return 0;
    return late_first(t);
}

#endif /* PROFCC_ALLOCATOR_TIMING_H */
