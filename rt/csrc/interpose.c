/* Interposers of the runtime: the malloc family, operator new/delete, mmap/munmap/mremap and
 * pthread_create, plus the frame-pointer walker.
 *
 * Why C: every entry point takes `__builtin_frame_address(0)` of its own frame (this file is
 * built with -fno-omit-frame-pointer), so the first recorded frame is exactly the return address
 * into the caller of malloc/new, whatever rustc inlines or however it uses rbp. The bookkeeping
 * is Rust (`alloc.rs`, `threads.rs`, `stack.rs`); this file only forwards and guards.
 *
 * Invariants:
 * - The malloc family forwards to the allocator the program would have used without profcc: the
 *   next definition after the executable (`dlsym(RTLD_NEXT, ...)`: an LD_PRELOADed or linked
 *   jemalloc/mimalloc/tcmalloc, else glibc), resolved once by the first call (see "the real
 *   allocator" below). While resolution runs (dlsym may allocate) calls are served from a static
 *   bootstrap pool whose blocks free/realloc/malloc_usable_size recognise. A static link (no
 *   dlsym) falls back to glibc's `__libc_*`. mmap/munmap/mremap use the raw syscall.
 * - `tls.in_rt` is the one re-entrancy guard: while it is set (the runtime itself runs, a libc
 *   function the runtime called runs, or the allocator runs inside one of our calls) every
 *   interposer forwards without recording.
 * - An object is removed from the object map *before* the real free/munmap, so another thread
 *   that gets the same address back cannot have its fresh entry deleted by us.
 * - Every interposer is a weak definition (`#pragma weak` below): a program that brings its own
 *   malloc (a statically linked mimalloc/jemalloc with override) links without duplicate
 *   symbols and keeps its allocator (unprofiled). operator new/delete call the `malloc`/`free`
 *   symbols, like libstdc++'s, so they pair with whichever allocator won the link.
 */
#define _GNU_SOURCE
#pragma GCC diagnostic ignored "-Wunused-parameter" /* operator new/delete take tags they ignore */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern void *__libc_stack_end;

#pragma weak malloc
#pragma weak free
#pragma weak cfree
#pragma weak calloc
#pragma weak realloc
#pragma weak reallocarray
#pragma weak posix_memalign
#pragma weak aligned_alloc
#pragma weak memalign
#pragma weak valloc
#pragma weak pvalloc
#pragma weak malloc_usable_size
#pragma weak _Znwm
#pragma weak _Znam
#pragma weak _ZnwmRKSt9nothrow_t
#pragma weak _ZnamRKSt9nothrow_t
#pragma weak _ZnwmSt11align_val_t
#pragma weak _ZnamSt11align_val_t
#pragma weak _ZnwmSt11align_val_tRKSt9nothrow_t
#pragma weak _ZnamSt11align_val_tRKSt9nothrow_t
#pragma weak _ZdlPv
#pragma weak _ZdaPv
#pragma weak _ZdlPvm
#pragma weak _ZdaPvm
#pragma weak _ZdlPvRKSt9nothrow_t
#pragma weak _ZdaPvRKSt9nothrow_t
#pragma weak _ZdlPvSt11align_val_t
#pragma weak _ZdaPvSt11align_val_t
#pragma weak _ZdlPvmSt11align_val_t
#pragma weak _ZdaPvmSt11align_val_t
#pragma weak _ZdlPvSt11align_val_tRKSt9nothrow_t
#pragma weak _ZdaPvSt11align_val_tRKSt9nothrow_t
#pragma weak mmap
#pragma weak mmap64
#pragma weak munmap
#pragma weak mremap
#pragma weak strdup
#pragma weak strndup
#pragma weak pthread_create
#pragma weak pthread_mutex_lock
#pragma weak pthread_mutex_trylock
#pragma weak pthread_mutex_unlock
#pragma weak madvise
#pragma weak posix_madvise
#pragma weak mprotect
#pragma weak sbrk
#pragma weak brk
#pragma weak pthread_spin_lock
#pragma weak pthread_cond_wait
#pragma weak pthread_cond_timedwait
#pragma weak pthread_barrier_wait
#pragma weak sem_wait
#pragma weak _exit
#pragma weak _Exit
#pragma weak abort
#pragma weak __assert_fail

/* ---- per-thread state (initial-exec TLS: no __tls_get_addr, no malloc) ---- */

#define HELD 4
struct profcc_tls {
    uint32_t tid_plus1; /* dense thread id + 1; 0 = not registered yet */
    uint32_t in_rt;     /* re-entrancy guard */
    uintptr_t stack_lo; /* bounds of this thread's stack, for the frame-pointer walker */
    uintptr_t stack_hi;
    /* C only (threads.rs mirrors the fields above): the allocator operation whose real call
     * runs (its OP_ + 1; 0: none), so the mmap family and the mutex see the allocator's own
     * calls (the allocator analysis's channels). */
    uint32_t alloc_op;
    /* Mutexes the allocator took inside the current operation and when (hold times). */
    uint32_t nheld;
    /* Operations before the next one whose events are counted (alloc_events), and whether
     * the current one's are. */
    uint32_t ev_countdown;
    uint32_t ev_on;
    uint32_t rng;
    /* Counted operations before the next timed one (alloc_time), the period that gap was
     * drawn with (the calls the next timed one stands for), and the thread's draws (their
     * count sets the period, `time_next`). */
    uint32_t time_left;
    uint32_t time_weight;
    uint32_t time_draws;
    /* The thread made its first counted operation (the allocator's set-up, not timed). */
    uint32_t alloc_seen;
    /* The allocator analysis's cells of this thread (see op_done; 0: none). */
    uint64_t *alloc_cells;
    /* The thread's sampling counters (see on_alloc; 0: none). */
    struct sample_head *sblock;
    void *held[HELD];
    uint64_t held_at[HELD];
    /* The last call that took the tail path (see `tail_inside`): the address of its
     * return-address slot with its OP_ + 1 in the low three bits (the slot is 8-aligned;
     * the op is read by the channels when the allocator analysis is on), and the return
     * address the slot held. One store fewer per call than a word of its own. */
    uintptr_t tail_slot;
    void *tail_ra;
    /* A tail-path new[] ran since the last operator new: an operator new at its marked
     * slot is the one libstdc++'s new[] jumps to (see _Znwm). */
    uint32_t tail_array;
    /* The tail path's ready word (see `tail_arm`): the calls it may still take before the
     * full path runs (0: none), the value it was armed with, and the cells it counts in
     * (0: the allocator analysis is off). */
    uint32_t tail_left;
    uint32_t tail_base;
    uint64_t *tail_cells;
};
__attribute__((tls_model("initial-exec"))) static __thread struct profcc_tls tls;

struct profcc_tls *profcc_tls(void) { return &tls; }

/* While a new thread asks glibc for its stack bounds (profcc_stack_bounds_self), what
 * pthread_getattr_np allocates (its cpuset, copied into the attribute's extension, which is
 * calloc'ed; all freed with the attribute) comes
 * from a buffer on the caller's stack, never from the program's allocator: that first malloc
 * would create the thread's arena and its tcache, and every block the thread's start routine
 * allocates would land 48..208 bytes later than natively (ARCHITECTURE.md, "Native layout").
 * Blocks carry their size in a 16-byte header; a request that does not fit goes to the
 * allocator as usual. */
struct scratch {
    char *base, *next, *end;
};
__attribute__((tls_model("initial-exec"))) static __thread struct scratch *scratch;

static inline int in_scratch(const void *p) {
    struct scratch *s = scratch;
    return s && (const char *)p >= s->base && (const char *)p < s->end;
}

static void *scratch_alloc(size_t n) {
    struct scratch *s = scratch;
    size_t need = 16 + ((n + 15) & ~(size_t)15);
    if (n > (size_t)(s->end - s->next) || need > (size_t)(s->end - s->next)) return 0;
    char *p = s->next;
    s->next += need;
    *(size_t *)p = n;
    return p + 16;
}

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FP() __builtin_frame_address(0)
/* ---- Rust side ---- */
enum {
    K_MALLOC = 0, K_CALLOC, K_REALLOC, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC, K_MEMALIGN, K_VALLOC,
    K_PVALLOC, K_NEW, K_NEW_ARRAY, K_MMAP, K_STRDUP, K_STRNDUP
};
struct profcc_obj { uint64_t addr, size; uint32_t site, tid; };
/* Returns the object's allocation-site index, NO_SITE when it was not recorded. */
uint32_t profcc_on_alloc(void *p, size_t n, uint32_t kind, void *fp);
#define NO_SITE 0xffffffffu
int profcc_take(void *p, struct profcc_obj *out);

/* ---- sampling's fast path (alloc_sample, rt/src/alloc.rs "Sampling") ----
 * While sampling runs, most calls record nothing: an allocation only counts in the thread's
 * totals and moves its countdown, a free only counts when the filter says no recorded object
 * starts in its bucket. Those calls are done here, without calling Rust; the rest (a recorded
 * allocation, a possible recorded free, a thread without a block, exact recording) go to
 * profcc_on_alloc / profcc_take, which do the whole work themselves. */
struct sample_head { /* the head of rt/src/alloc/stats.rs's `Block` (a unit test checks it) */
    int64_t left;    /* bytes until the next recorded allocation */
    uint64_t rng;    /* 0: not seeded yet */
    uint64_t allocations, frees, bytes;
};
extern uint64_t profcc_sample_mean; /* 0: every allocation is recorded */

/* The granule table (rt/src/alloc.rs `GRANULES`), one mapping in two parts, each with a byte
 * for each 16-byte granule of the address space modulo 2^GRANULE_BITS granules (a 16 MiB
 * window). Each window starts at a hash of the address's upper bits: heaps with one layout at
 * different addresses (glibc's arenas, 64 MiB-aligned) use different bytes; granules 16 MiB
 * apart in one window share their bytes. The filter part counts the recorded objects that
 * start in the granule (sampling's filter); the reuse part, REUSE_AT bytes in, is the
 * allocator analysis's reuse state (`freed_in`). Apart, not interleaved: a filter page
 * nothing was recorded in stays the kernel's shared zero page, so the filter costs a free
 * next to no cache, and the reuse state the analysis writes fills half the lines (a 12 MiB
 * heap's 768 KiB, not 1.5 MiB: under a 1 MiB L2; docs/benchmarks.md, "The reuse part"). */
extern uint8_t *profcc_granules;
#define GRANULE_BITS 20
#define REUSE_AT (1u << GRANULE_BITS)

static inline uint64_t granule_index(uint64_t a) {
    uint64_t shift = ((a >> (4 + GRANULE_BITS)) * 0x9E3779B97F4A7C15ull) >> (64 - GRANULE_BITS);
    return ((a >> 4) + shift) & ((1u << GRANULE_BITS) - 1);
}
uint64_t profcc_granule_index(uint64_t a) { return granule_index(a); }
/* a's filter byte (0: no table). */
static inline uint8_t *granule(uint64_t a) {
    uint8_t *g = __atomic_load_n(&profcc_granules, __ATOMIC_ACQUIRE);
    return g ? g + granule_index(a) : 0;
}

static inline void tail_sync(void);
void profcc_sample_set_block(struct sample_head *b) {
    tail_sync();
    tls.sblock = b;
}

static inline uint32_t on_alloc(void *p, size_t n, uint32_t kind, void *fp) {
    struct sample_head *b = tls.sblock;
    if (LIKELY(b != 0) && b->rng != 0 && __atomic_load_n(&profcc_sample_mean, __ATOMIC_RELAXED)) {
        int64_t left = b->left - (int64_t)n;
        if (LIKELY(left > 0)) {
            b->left = left;
            b->allocations += 1;
            b->bytes += n;
            return NO_SITE;
        }
    }
    return profcc_on_alloc(p, n, kind, fp);
}

/* `g`: p's granule (0: no table). */
static inline int take_obj(void *p, uint8_t *g, struct profcc_obj *out) {
    struct sample_head *b = tls.sblock;
    if (LIKELY(b != 0) && __atomic_load_n(&profcc_sample_mean, __ATOMIC_RELAXED)) {
        if (g && __atomic_load_n(&g[0], __ATOMIC_RELAXED) == 0) {
            b->frees += 1;
            return 0;
        }
    }
    return profcc_take(p, out);
}
void profcc_account_free(const struct profcc_obj *o);
void profcc_put_back(const struct profcc_obj *o);
void profcc_on_mmap(void *p, size_t n, void *fp);
void profcc_on_munmap(void *p, size_t n);
void profcc_on_mremap(void *old, size_t old_n, void *p, size_t n);
void *profcc_thread_prepare(void *(*fn)(void *), void *arg, void *fp);
void profcc_thread_started(void *rec, void *(**fn)(void *), void **arg);
void profcc_thread_exiting(void);
void profcc_thread_failed(void *rec);

/* ---- the allocator analysis's timing (rt/src/analyses/allocator.rs) ----
 * The operations, in the order of the analysis's `OP_NAMES` (a unit test there reads this
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
 * `old_n`: realloc's old block's size (NO_SIZE: not recorded); `cycles`: TSC ticks in the
 * allocator when the call was timed, standing for `weight` calls (0: not timed); `site`: the
 * object's allocation site (NO_SITE: not recorded). */
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
/* Ticks since the start (0: not timed). */
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

/* ---- the allocator analysis's cells ----
 * Every counted operation is filed here, next to the interposers: its request size's bucket,
 * whether its address is reused, and the phase make its cell, whose count goes up in the
 * thread's block (`Cells::ops` in rt/src/analyses/allocator.rs, which owns the tables below
 * and checks these layout constants in a unit test). profcc_alloc_op in Rust is called only
 * for what needs more: a timed call, a recorded object, counted events, the thread's first
 * call, a thread without a block. */
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

/* ---- the real allocator ----
 *
 * `next_alloc` holds the functions the interposers forward to. Until an entry is set, REAL()
 * calls its boot stub; the first call of any of them resolves all entries at once with dlsym(RTLD_NEXT, name): the first
 * definition after the executable in the lookup order, i.e. what the program's own references
 * would have bound to without profcc (an LD_PRELOADed allocator, then the libraries it links, in
 * link order, glibc last). Each symbol is looked up on its own, as the dynamic linker would bind
 * it: jemalloc 5.3 has no pvalloc, so its pvalloc is glibc's, with or without profcc.
 *
 * Thread safety: one thread wins the UNRESOLVED -> RESOLVING transition and calls dlsym; every
 * allocation made meanwhile, by dlsym itself (guard set: not recorded) or by another thread
 * (recorded as usual), comes from the static bootstrap pool, so nobody waits for the resolver (a
 * thread waiting inside malloc could hold the loader lock dlsym needs). A free/realloc of a
 * block that is not the pool's cannot arrive before resolution except from another thread
 * racing it; that one yields until resolution is done. The entries are published with release
 * stores before the state turns RESOLVED, and never change again: after resolution each
 * interposer is one load, one predictable branch (the entry is set) and an indirect call
 * between two stores of the guard (free/realloc/malloc_usable_size add one predictable range
 * check for pool blocks). The pool holds 64 KiB; past that, allocations during resolution fail (ENOMEM).
 *
 * The fallback when dlsym does not resolve `malloc` (a -static link: there glibc's strong
 * malloc, free and realloc also win over our weak ones, while calloc, the aligned family and
 * operator new/delete stay ours) or resolves it to ourselves: glibc's `__libc_*` for the whole
 * family. */

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void (*free_fn)(void *);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef size_t (*usable_fn)(void *);

struct real_alloc {
    malloc_fn malloc;
    calloc_fn calloc;
    realloc_fn realloc;
    free_fn free;
    memalign_fn memalign;
    posix_memalign_fn posix_memalign;
    memalign_fn aligned_alloc;
    malloc_fn valloc;
    malloc_fn pvalloc;
    usable_fn usable;
};

/* The next operator new(size_t) and new[](size_t) (libstdc++'s or an allocator's; 0: none,
 * or not resolved yet), for their tail paths. */
typedef void *(*new_fn)(size_t);
void *_Znwm(size_t n);
void *_Znam(size_t n);
static new_fn next_new, next_new_array;

/* Zero (in .bss, after the program's own: no .data or TLS of ours moves the program's globals)
 * until resolution fills it. REAL(f): the entry, or its boot stub while it is still null. */
static struct real_alloc next_alloc;
#define REAL(f)                                                                               \
    ({                                                                                        \
        __typeof__(next_alloc.f) f_ = __atomic_load_n(&next_alloc.f, __ATOMIC_ACQUIRE);        \
        UNLIKELY(!f_) ? boot_##f : f_;                                                        \
    })

/* On the tail path: the thread is armed only once resolution is done (`tail_arm`), so the
 * entry is there. */
#define REAL_ARMED(f) __atomic_load_n(&next_alloc.f, __ATOMIC_RELAXED)

/* ---- bootstrap pool: static, bump-allocated, never reused ---- */

/* Only 16-aligned, like malloc's blocks: a page-aligned .bss object would raise the alignment of
 * the executable's whole .bss and move the program's own globals (their cache-line placement,
 * which the sharing analysis reports, then differs from the clang-22 build). */
enum { POOL_SIZE = 64 * 1024, POOL_HDR = 16 };
static _Alignas(16) char pool[POOL_SIZE];
static size_t pool_used;

static inline int in_pool(const void *p) { return (uintptr_t)p - (uintptr_t)pool < POOL_SIZE; }

/* Sampling's filter counts (rt/src/alloc.rs; no-ops while there is no table): the runtime's
 * own blocks, the bootstrap pool's and the dtv side blocks, are counted there like recorded
 * objects, so the tail path's free sends them to the full path, which knows them, without a
 * check of its own (`tail_free`). */
void profcc_filter_add(uint64_t a);
void profcc_filter_remove(uint64_t a);

/* The size asked for, kept in the 16 bytes before each block (for realloc and usable_size). */
static inline size_t pool_size_of(const void *p) { return ((const size_t *)p)[-2]; }

static void *pool_alloc(size_t n, size_t al) {
    if (al < POOL_HDR) al = POOL_HDR;
    if (n > POOL_SIZE || al > 4096 || (al & (al - 1)) != 0) {
        errno = ENOMEM;
        return 0;
    }
    uintptr_t base = (uintptr_t)pool;
    size_t old = __atomic_load_n(&pool_used, __ATOMIC_RELAXED);
    for (;;) {
        size_t at = ((base + old + POOL_HDR + al - 1) & ~(uintptr_t)(al - 1)) - base;
        size_t end = at + ((n + POOL_HDR - 1) & ~(size_t)(POOL_HDR - 1));
        if (end > POOL_SIZE) {
            errno = ENOMEM;
            return 0;
        }
        if (__atomic_compare_exchange_n(&pool_used, &old, end, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            ((size_t *)(pool + at))[-2] = n;
            profcc_filter_add((uintptr_t)(pool + at)); /* see `profcc_pin_own_blocks` */
            return pool + at; /* zeroed: .bss, never handed out twice */
        }
    }
}

static void *boot_malloc(size_t n);

/* realloc out of the pool: a fresh block from the current allocator, the old contents copied;
 * the pool block is never handed to any free. */
static void *pool_realloc(void *old, size_t n) {
    void *p = REAL(malloc)(n);
    size_t have = pool_size_of(old);
    if (p) __builtin_memcpy(p, old, have < n ? have : n);
    return p;
}

/* ---- resolution ---- */

enum { UNRESOLVED, RESOLVING, RESOLVED };
static int real_state;
static struct profcc_tls *resolver; /* &tls of the thread that resolves */

/* __libc_* fallbacks with the checks glibc's public entry points make. */
static int libc_posix_memalign(void **out, size_t al, size_t n) {
    if (al == 0 || (al & (al - 1)) != 0 || al % sizeof(void *) != 0) return EINVAL;
    int saved = errno;
    void *p = __libc_memalign(al, n);
    if (!p) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    return 0;
}

static void *libc_aligned_alloc(size_t al, size_t n) {
    if (al == 0 || (al & (al - 1)) != 0) { /* glibc 2.36 semantics */
        errno = EINVAL;
        return 0;
    }
    return __libc_memalign(al, n);
}

static size_t libc_usable(void *p) { /* glibc chunk header: size with flag bits, minus header */
    size_t h = ((size_t *)p)[-1];
    return (h & 2) ? (h & ~(size_t)7) - 2 * sizeof(size_t) : (h & ~(size_t)7) - sizeof(size_t);
}

/* dlsym(RTLD_NEXT, name), or `fallback` when it finds nothing or finds our own `self`. */
static void *next_or(const char *name, void *self, void *fallback) {
    void *f = dlsym(RTLD_NEXT, name);
    return f && f != self ? f : fallback;
}

static void *boot_calloc(size_t n, size_t m);
static void *boot_realloc(void *p, size_t n);
static void boot_free(void *p);
static void *boot_memalign(size_t al, size_t n);
static int boot_posix_memalign(void **out, size_t al, size_t n);
static void *boot_aligned_alloc(size_t al, size_t n);
static void *boot_valloc(size_t n);
static void *boot_pvalloc(size_t n);
static size_t boot_usable(void *p);


/* Resolve once; returns RESOLVED, or RESOLVING while some thread (maybe this one) resolves. */
__attribute__((noinline)) static int resolve(void) {
    int s = __atomic_load_n(&real_state, __ATOMIC_ACQUIRE);
    if (s != UNRESOLVED ||
        !__atomic_compare_exchange_n(&real_state, &s, RESOLVING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s == UNRESOLVED ? RESOLVING : s;
    __atomic_store_n(&resolver, &tls, __ATOMIC_RELAXED);
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1; /* dlsym's own allocations (served by the pool) are not the program's */
    struct real_alloc r;
    new_fn nw = 0, nwa = 0;
    r.malloc = (malloc_fn)next_or("malloc", (void *)malloc, 0);
    if (!r.malloc) {
        r = (struct real_alloc){__libc_malloc, __libc_calloc, __libc_realloc, __libc_free,
                                __libc_memalign, libc_posix_memalign, libc_aligned_alloc,
                                __libc_valloc, __libc_pvalloc, libc_usable};
    } else {
        r.calloc = (calloc_fn)next_or("calloc", (void *)calloc, (void *)__libc_calloc);
        r.realloc = (realloc_fn)next_or("realloc", (void *)realloc, (void *)__libc_realloc);
        r.free = (free_fn)next_or("free", (void *)free, (void *)__libc_free);
        r.memalign = (memalign_fn)next_or("memalign", (void *)memalign, (void *)__libc_memalign);
        r.posix_memalign = (posix_memalign_fn)next_or("posix_memalign", (void *)posix_memalign,
                                                      (void *)libc_posix_memalign);
        r.aligned_alloc = (memalign_fn)next_or("aligned_alloc", (void *)aligned_alloc,
                                               (void *)libc_aligned_alloc);
        r.valloc = (malloc_fn)next_or("valloc", (void *)valloc, (void *)__libc_valloc);
        r.pvalloc = (malloc_fn)next_or("pvalloc", (void *)pvalloc, (void *)__libc_pvalloc);
        r.usable = (usable_fn)next_or("malloc_usable_size", (void *)malloc_usable_size,
                                      (void *)libc_usable);
        /* Here, not at the first new: dlsym may allocate, and only resolution's calls come
         * from the pool (a first new inside the allocator's own set-up would reach it half
         * made: tcmalloc's). */
        nw = (new_fn)next_or("_Znwm", (void *)_Znwm, 0);
        nwa = (new_fn)next_or("_Znam", (void *)_Znam, 0);
    }
    tls.in_rt = saved;
    __atomic_store_n(&next_alloc.malloc, r.malloc, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.calloc, r.calloc, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.realloc, r.realloc, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.free, r.free, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.memalign, r.memalign, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.posix_memalign, r.posix_memalign, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.aligned_alloc, r.aligned_alloc, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.valloc, r.valloc, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.pvalloc, r.pvalloc, __ATOMIC_RELEASE);
    __atomic_store_n(&next_alloc.usable, r.usable, __ATOMIC_RELEASE);
    __atomic_store_n(&next_new, nw, __ATOMIC_RELEASE);
    __atomic_store_n(&next_new_array, nwa, __ATOMIC_RELEASE);
    __atomic_store_n(&real_state, RESOLVED, __ATOMIC_RELEASE);
    return RESOLVED;
}

/* For calls that must reach the real allocator (free/realloc of a block that is not the
 * pool's): wait while another thread resolves. 0 only inside this thread's own resolution. */
static int resolved_or_wait(void) {
    for (;;) {
        if (resolve() == RESOLVED) return 1;
        if (__atomic_load_n(&resolver, __ATOMIC_RELAXED) == &tls) return 0;
        sched_yield();
    }
}

/* The boot stubs: what REAL() calls until resolution is done. */
static void *boot_malloc(size_t n) { return resolve() == RESOLVED ? REAL(malloc)(n) : pool_alloc(n, 0); }

static void *boot_calloc(size_t n, size_t m) {
    if (resolve() == RESOLVED) return REAL(calloc)(n, m);
    size_t bytes;
    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return 0;
    }
    return pool_alloc(bytes, 0);
}

static void *boot_realloc(void *p, size_t n) {
    if (!p) return boot_malloc(n);
    if (resolved_or_wait()) return REAL(realloc)(p, n);
    errno = ENOMEM; /* a foreign block inside our own resolution: cannot happen, never crash */
    return 0;
}

static void boot_free(void *p) {
    if (p && resolved_or_wait()) REAL(free)(p); /* else leaked: see boot_realloc */
}

static void *boot_memalign(size_t al, size_t n) {
    return resolve() == RESOLVED ? REAL(memalign)(al, n) : pool_alloc(n, al);
}

static int boot_posix_memalign(void **out, size_t al, size_t n) {
    if (resolve() == RESOLVED) return REAL(posix_memalign)(out, al, n);
    if (al == 0 || (al & (al - 1)) != 0 || al % sizeof(void *) != 0) return EINVAL;
    void *p = pool_alloc(n, al);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

static void *boot_aligned_alloc(size_t al, size_t n) {
    return resolve() == RESOLVED ? REAL(aligned_alloc)(al, n) : pool_alloc(n, al);
}

static void *boot_valloc(size_t n) {
    return resolve() == RESOLVED ? REAL(valloc)(n) : pool_alloc(n, 4096);
}

static void *boot_pvalloc(size_t n) { /* the pool block is page-aligned, its size not rounded */
    return resolve() == RESOLVED ? REAL(pvalloc)(n) : pool_alloc(n, 4096);
}

static size_t boot_usable(void *p) { return resolved_or_wait() ? REAL(usable)(p) : 0; }

/* The side blocks of dynamic thread vectors (see "the dynamic thread vector's side blocks"
 * below): one reservation of DTV_SLOTS slots of DTV_SLOT bytes. */
#define DTV_SLOT 1024
#define DTV_SLOTS 65536
/* dtv_area + 2^63, 0 while there is none: `in_dtv` is one subtraction and one compare, and
 * with no area it is false for every user address (each is below 2^63), with the word still
 * in .bss. */
static uintptr_t dtv_key;
#define DTV_BIAS ((uintptr_t)1 << 63)
static inline int in_dtv(const void *p) {
    return (uintptr_t)p + DTV_BIAS - __atomic_load_n(&dtv_key, __ATOMIC_ACQUIRE) <
           (uintptr_t)DTV_SLOT * DTV_SLOTS;
}

/* ---- the tail path (sampling) ----
 *
 * Measured on malloc(40)/free pairs (docs/benchmarks.md, "The tail path"): an interposer that
 * does its work before the real call and jumps to it at the end (a tail call) costs 1.03x
 * native; one that does anything after the call returns, even one store, 1.25x. So while
 * sampling runs, a malloc, calloc or free of the program that records nothing does all its
 * bookkeeping first and jumps to the allocator: the totals, sampling's countdown and filter,
 * and under the allocator analysis the two countdowns and the call's cell. A free's reuse is
 * known before the call; a malloc's is not (its address is what the allocator returns), so
 * such a malloc is filed as reuse unknown (REUSE_UNKNOWN) and the dump splits those calls
 * between new and reused in the proportion of the cell's calls whose reuse was seen. Whatever
 * needs the result or a timed call (a recorded allocation, a free the filter cannot clear,
 * a timed or event-counted call, a thread's first, a request of TAIL_MAX bytes or more, which
 * is always timed and may fail) takes the full path. A tail-path malloc or calloc that fails
 * (a small request, so only at the end of memory) still counts in the totals.
 *
 * The guard cannot be held around a call the interposer jumps to. The call leaves a marker
 * instead: the address of its return-address slot and the program's return address in it.
 * While the allocator runs, whatever it calls (its mmap, its mutexes) runs below that slot,
 * which still holds the program's return address; once it has returned, the program's next
 * call at that depth writes its own return address there. So an interposer whose own
 * return-address slot is below the marked one, which still holds the marked address, runs
 * inside that call: an allocator's mmap is neither recorded as the program's nor missed as a
 * channel. One slot is ambiguous: the marked one itself, holding the marked address, is
 * where the same call instruction, called again at the same depth, puts it (a loop calling
 * malloc), and also where an allocator that jumps to mmap leaves it. Allocation calls take it
 * for the program's loop (`tail_nested`), the mmap family and the mutexes for the
 * allocator's jump (`tail_inside`); the first is fooled only by an allocator whose malloc
 * jumps to malloc, the second by a function pointer called at one place that held malloc and
 * now holds a function of the program that maps memory. */
#define TAIL_MAX TIME_ALL_FROM
/* Under the analysis, the most calls one arming lets the tail path take: they are filed in
 * the phase (serial, parallel) the thread saw when it was armed. */
#define TAIL_PHASE_CALLS 1024

/* The marked slot's low bits: the op of its call + 1 (`tail_mark`). */
#define TAIL_OP_MASK ((uintptr_t)7)
_Static_assert(OP_ALIGNED + 1 <= TAIL_OP_MASK, "an op + 1 fits the marked slot's low bits");
/* Whether the interposer whose return address is at `own` runs inside the allocator's call
 * of the last tail-path operation (`at`: also when `own` is the marked slot itself). */
__attribute__((always_inline)) static inline int tail_under(uintptr_t own, int at) {
    /* The marked slot plus its op (1..7; 0 when none: below every slot). `own` is 8-aligned,
     * so own >= slot is own + 8 > marked, and own > slot is own > marked. */
    uintptr_t m = tls.tail_slot;
    if (LIKELY(own + (at ? 0 : sizeof(void *)) > m)) return 0; /* above it, or at it and not `at` */
    return *(void *const volatile *)(m & ~TAIL_OP_MASK) == tls.tail_ra;
}
/* In the interposer itself (its frame): see above. */
#define OWN_SLOT() ((uintptr_t)__builtin_frame_address(0) + sizeof(void *))
#define tail_inside() tail_under(OWN_SLOT(), 1)
#define tail_nested() tail_under(OWN_SLOT(), 0)
/* The program's operation (OP_ + 1) whose allocator call runs now, for the channels: the
 * full path's mark, or the tail path's when the caller is inside it; 0: none. */
__attribute__((always_inline)) static inline uint32_t op_running(void) {
    uint32_t op = tls.alloc_op;
    /* (the switch before the stack: the marker is left with the analysis off too, and the
     * mutex interposers ask on every call) */
    if (LIKELY(op == 0) && UNLIKELY(tls.tail_slot != 0) &&
        __atomic_load_n(&profcc_alloc_timing, __ATOMIC_RELAXED) && tail_inside())
        op = (uint32_t)(tls.tail_slot & TAIL_OP_MASK);
    return op;
}
/* Inside an allocator call or the runtime: what an interposer sees is not the program's
 * (an allocation call: `nested`; the mmap family: `inside`). */
#define nested_call() (tls.in_rt || tail_nested())
#define not_programs() (tls.in_rt || tail_inside())

/* The ready word. Most of what lets a call take the tail path changes only in the full path
 * or in the runtime: the thread's sampling block and its seed, the granule table, under the
 * analysis its cells, its first call, and the two countdowns (timing, events). So the full
 * path, after the program's call, arms the thread: `tail_left` = the calls the tail path may
 * take before a countdown runs out (the smaller of the two, at most TAIL_PHASE_CALLS;
 * UINT32_MAX without the analysis), `tail_cells` = the cells it counts in, moved to the
 * thread's phase now; 0 when something is missing. The tail path then checks that word, the
 * guard and what depends on the call itself. Not the sampling mean: when sampling stops for
 * good while threads run (rt/src/alloc.rs `module_registered`), the filter is saturated
 * first (every free takes the full path) and every block's countdown run out (every malloc
 * does, except one of a thread whose call was under way then and stores its old countdown
 * back, until that runs out), and the full path no longer arms. A full-path call
 * (`timing_start`) or a change of the block or the cells first moves the countdowns by the
 * calls taken (`tail_sync`).
 * Measured: docs/benchmarks.md, "The ready word". */
__attribute__((noinline)) static void tail_arm(void) {
    tail_sync();
    /* Exact recording: never armed. */
    if (!__atomic_load_n(&profcc_sample_mean, __ATOMIC_RELAXED)) return;
    struct sample_head *b = tls.sblock;
    /* Armed only when resolution is done (the tail path jumps to REAL_ARMED) and no scratch
     * buffer serves the thread (the tail path does not look for scratch blocks). */
    if (!b || !b->rng || tls.in_rt || scratch != 0 ||
        __atomic_load_n(&real_state, __ATOMIC_ACQUIRE) != RESOLVED ||
        !__atomic_load_n(&profcc_granules, __ATOMIC_ACQUIRE))
        return;
    uint32_t left = UINT32_MAX;
    if (__atomic_load_n(&profcc_alloc_timing, __ATOMIC_RELAXED)) {
        if (!tls.alloc_cells || !tls.alloc_seen) return;
        /* The phase is the arming's: its cells are the tail path's base (a cell's index is
         * linear in the phase, `cell_of`), for at most TAIL_PHASE_CALLS calls. */
        uint32_t parallel = __atomic_load_n(&profcc_live_threads, __ATOMIC_RELAXED) > 1;
        tls.tail_cells = tls.alloc_cells + (size_t)parallel * A_CELL_WORDS;
        left = tls.time_left < tls.ev_countdown ? tls.time_left : tls.ev_countdown;
        if (left > TAIL_PHASE_CALLS) left = TAIL_PHASE_CALLS;
    }
    tls.tail_left = tls.tail_base = left;
}
/* Whether the thread is armed and outside the runtime. */
#define tail_ready() (LIKELY(tls.tail_left != 0) && LIKELY(!tls.in_rt))
/* The analysis's cell of a tail-path call (`b` bucket, `reused` 0, 1 or REUSE_UNKNOWN;
 * `cells`: the thread's, moved to the arming's phase). */
static inline void tail_cell(uint64_t *cells, uint32_t op, uint32_t b, uint32_t reused) {
    cells[(size_t)cell_at(op, b, reused, 0) * A_CELL_WORDS] += 1;
}
/* The caller jumps to the allocator: the call is taken, leave the marker (`fa`: its frame
 * address). */
static inline void tail_mark(void *fa, void *ra, uint32_t op) {
    tls.tail_left--;
    tls.tail_slot = ((uintptr_t)fa + sizeof(void *)) | (op + 1); /* OP_ALIGNED + 1 is 7 */
    tls.tail_ra = ra;
}
/* What a call does when the thread is armed: */
#define TAIL_FULL 0    /* the full path */
#define TAIL_TAKEN 1   /* counted here; the caller jumps to the allocator */
#define TAIL_INSIDE 2  /* made inside a tail-path call (the allocator's own, or the malloc of
                          libstdc++'s operator new): the caller jumps to the allocator,
                          uncounted, as the full path would forward it (the marker still
                          tells what this call runs inside) */
/* An n-byte malloc, calloc or realloc(0, n) (`op`) of the program, or operator new. */
__attribute__((always_inline)) static inline int tail_alloc(uint32_t op, size_t n, void *fa, void *ra) {
    if (UNLIKELY(n >= TAIL_MAX) || !tail_ready()) return TAIL_FULL;
    if (UNLIKELY(tail_nested())) return TAIL_INSIDE;
    struct sample_head *b = tls.sblock;
    int64_t left = b->left - (int64_t)n;
    if (UNLIKELY(left <= 0)) return TAIL_FULL;
    uint64_t *cells = tls.tail_cells;
    if (cells) tail_cell(cells, op, bucket_of(n), REUSE_UNKNOWN);
    b->left = left;
    b->allocations += 1;
    b->bytes += n;
    tail_mark(fa, ra, op);
    return TAIL_TAKEN;
}
/* A free of the program's (p not null) takes the tail path: sampling's filter says no
 * recorded object starts in p's granule, nor a block of the runtime's own (the bootstrap
 * pool's, a dtv side block: `profcc_filter_add`), which the full path knows; a free the
 * filter stops goes there even when made inside an allocator call (the full path forwards
 * it). */
__attribute__((always_inline)) static inline int tail_free(uint32_t op, void *p, void *fa, void *ra) {
    if (!tail_ready()) return TAIL_FULL;
    /* armed: the table is there */
    uint8_t *g = __atomic_load_n(&profcc_granules, __ATOMIC_RELAXED) + granule_index((uint64_t)p);
    if (__atomic_load_n(g, __ATOMIC_RELAXED) != 0) return TAIL_FULL;
    if (UNLIKELY(tail_nested())) return TAIL_INSIDE;
    uint64_t *cells = tls.tail_cells;
    if (cells) tail_cell(cells, op, A_BUCKETS - 1, (uint32_t)freed_in((uint64_t)p, g));
    tls.sblock->frees += 1;
    tail_mark(fa, ra, op);
    return TAIL_TAKEN;
}

/* ---- malloc family ----
 *
 * The allocator runs with the guard set: what it does inside (its own mmap/munmap, a malloc
 * while it initialises) is the allocator's work, not the program's, just as glibc malloc's
 * internal mmaps are invisible to any interposer. The guard's value on entry says whether the
 * call is the program's (0: record it) or made inside the runtime, an allocator or new/delete
 * (forward only). */

#define FORWARD_AND_RECORD(call, n, kind, op)                                                \
    do {                                                                                     \
        uint32_t saved = tls.in_rt, outer = nested_call();                          \
        tls.in_rt = 1;                                                                       \
        struct op_timer t = timing_start(outer, (op), (n));                                  \
        void *p = (call);                                                                    \
        uint64_t c = timing_end(&t);                                                         \
        if (LIKELY(!outer)) {                                                                \
            uint32_t site = LIKELY(p != 0) ? on_alloc(p, (n), (kind), FP()) : NO_SITE; \
            if (counted(&t)) op_done((op), (n), p, 0, NO_SIZE, c, &t, site, granule((uint64_t)p), 0); \
        }                                                                                    \
        tls.in_rt = saved;                                                                   \
        if (LIKELY(!outer)) tail_arm();                                                      \
        return p;                                                                            \
    } while (0)

/* ---- the dynamic thread vector's side blocks ----
 * For each new thread glibc callocs a dynamic thread vector (dtv) of one 16-byte entry per TLS
 * module plus 16, from the creating thread's heap. The runtime's thread-locals make the
 * executable a TLS module, so in a program without thread-locals of its own every thread start
 * would take a 16-byte larger block than natively and move every later block of the program
 * (ARCHITECTURE.md, "Native layout"). When the driver says the program has none
 * (`--defsym=__profcc_native_tls_absent=1`, see driver/src/layout.rs), the vector glibc asks
 * for inside pthread_create is served from a side block in the runtime's own memory, and the
 * program's allocator gets at the same moment the request glibc would have made natively (one
 * entry fewer): that twin is freed, or resized, whenever glibc frees or resizes the vector, so
 * the program's heap sees exactly the native calls. Side blocks are fixed 1 KiB slots in one
 * reservation; a vector that does not fit, or a full reservation, goes to the allocator as
 * before (16 bytes off, noted in ARCHITECTURE.md). Only when all four allocation functions are
 * the runtime's (in a -static link libc.a's may win), since the block must come back to us. */
extern char __profcc_native_tls_absent __attribute__((weak)); /* through the GOT: 0 or 1 */
#define DTV_ENTRY 16 /* sizeof(dtv_t) on x86-64 */
struct dtv_head {
    void *twin;   /* the program allocator's block of the native size; next free slot when free */
    size_t bytes; /* what glibc asked for */
};
static char *dtv_area;
static size_t dtv_used;     /* slots handed out at least once */
static struct dtv_head *dtv_free_list;
static int dtv_lock;
__attribute__((tls_model("initial-exec"))) static __thread uint32_t creating_thread;


static void dtv_lock_take(void) {
    while (__atomic_exchange_n(&dtv_lock, 1, __ATOMIC_ACQUIRE)) sched_yield();
}
static void dtv_lock_drop(void) { __atomic_store_n(&dtv_lock, 0, __ATOMIC_RELEASE); }

static struct dtv_head *dtv_slot_take(void) {
    struct dtv_head *h = 0;
    dtv_lock_take();
    if (!dtv_area) {
        long a = syscall(SYS_mmap, 0, (size_t)DTV_SLOT * DTV_SLOTS, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a != -1) {
            __atomic_store_n(&dtv_area, (char *)a, __ATOMIC_RELEASE);
            __atomic_store_n(&dtv_key, (uintptr_t)a + DTV_BIAS, __ATOMIC_RELEASE);
        }
    }
    if (dtv_free_list) {
        h = dtv_free_list;
        dtv_free_list = (struct dtv_head *)h->twin;
    } else if (dtv_area && dtv_used < DTV_SLOTS) {
        h = (struct dtv_head *)(dtv_area + dtv_used++ * DTV_SLOT);
    }
    dtv_lock_drop();
    return h;
}

static void dtv_slot_give(struct dtv_head *h) {
    dtv_lock_take();
    h->twin = dtv_free_list;
    dtv_free_list = h;
    dtv_lock_drop();
}

static int own_allocator_linked(void);

/* calloc(n, 16) inside pthread_create: the vector. 0 when it stays with the allocator. */
static void *dtv_calloc(size_t n) {
    size_t bytes = n * DTV_ENTRY;
    if (bytes > DTV_SLOT - sizeof(struct dtv_head) || !own_allocator_linked()) return 0;
    struct dtv_head *h = dtv_slot_take();
    if (!h) return 0;
    h->twin = REAL(calloc)(n - 1, DTV_ENTRY);
    if (!h->twin) {
        dtv_slot_give(h);
        return 0;
    }
    h->bytes = bytes;
    profcc_filter_add((uintptr_t)(h + 1)); /* after the slot was taken: see `profcc_pin_own_blocks` */
    return __builtin_memset(h + 1, 0, bytes);
}

static void dtv_free(void *p) {
    struct dtv_head *h = (struct dtv_head *)p - 1;
    profcc_filter_remove((uintptr_t)p);
    REAL(free)(h->twin);
    dtv_slot_give(h);
}

/* The granule table was just published (rt/src/alloc.rs `map_granules`): count the blocks the
 * runtime handed out before, which `pool_alloc` and `dtv_calloc` could not. Each of those
 * reads the table after taking its block, and this reads the blocks taken after publishing
 * the table (seq_cst, or under the dtv lock), so every block is counted at least once; one
 * counted twice, or a free dtv slot counted, only sends a few more frees to the full path. */
void profcc_pin_own_blocks(void) {
    size_t used = __atomic_load_n(&pool_used, __ATOMIC_SEQ_CST);
    for (size_t off = 0; off < used; off += POOL_HDR) profcc_filter_add((uintptr_t)pool + off);
    dtv_lock_take();
    for (size_t i = 0; dtv_area && i < dtv_used; i++)
        profcc_filter_add((uintptr_t)(dtv_area + i * DTV_SLOT) + sizeof(struct dtv_head));
    dtv_lock_drop();
}

/* glibc grows a thread's vector with realloc when a dlopen'ed library adds TLS modules: the twin
 * grows with it (one entry fewer); a vector past the slot moves to the allocator. */
static void *dtv_realloc(void *p, size_t n) {
    struct dtv_head *h = (struct dtv_head *)p - 1;
    if (n <= DTV_SLOT - sizeof(struct dtv_head) && n > DTV_ENTRY) {
        void *twin = REAL(realloc)(h->twin, n - DTV_ENTRY);
        if (!twin) return 0;
        h->twin = twin;
        h->bytes = n;
        return p;
    }
    void *q = REAL(malloc)(n);
    if (!q) return 0;
    __builtin_memcpy(q, p, h->bytes < n ? h->bytes : n);
    dtv_free(p);
    return q;
}

__attribute__((noinline)) static void *malloc_full(size_t n) {
    FORWARD_AND_RECORD(REAL(malloc)(n), n, K_MALLOC, OP_MALLOC);
}

void *malloc(size_t n) {
    /* armed: no scratch buffer (`tail_arm`) */
    if (LIKELY(tail_alloc(OP_MALLOC, n, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return REAL_ARMED(malloc)(n);
    if (UNLIKELY(scratch != 0)) {
        void *p = scratch_alloc(n);
        if (p) return p;
    }
    __attribute__((musttail)) return malloc_full(n);
}

/* strdup and strndup: libc's copies call the allocator from inside libc, which has no frame
 * pointers, so the block's stack would stop at `__strdup` and never name the caller. Done
 * here, the walk starts at the program's call. The allocator sees the call libc makes (one
 * malloc of the string's length + 1), so the heap keeps its native layout. */
static char *dup_n(const char *s, size_t len, uint32_t kind, void *fp) {
    char *p = 0;
    if (UNLIKELY(scratch != 0)) {
        p = scratch_alloc(len + 1);
        if (p) {
            __builtin_memcpy(p, s, len);
            p[len] = 0;
            return p;
        }
    }
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct op_timer t = timing_start(outer, OP_MALLOC, len + 1);
    p = REAL(malloc)(len + 1);
    uint64_t c = timing_end(&t);
    if (LIKELY(p != 0)) {
        __builtin_memcpy(p, s, len);
        p[len] = 0;
    }
    if (LIKELY(!outer)) {
        uint32_t site = LIKELY(p != 0) ? on_alloc(p, len + 1, kind, fp) : NO_SITE;
        if (counted(&t)) op_done(OP_MALLOC, len + 1, p, 0, NO_SIZE, c, &t, site, granule((uint64_t)p), 0);
    }
    tls.in_rt = saved;
    return p;
}

char *strdup(const char *s) { return dup_n(s, __builtin_strlen(s), K_STRDUP, FP()); }

char *strndup(const char *s, size_t n) { return dup_n(s, strnlen(s, n), K_STRNDUP, FP()); }

__attribute__((noinline)) static void free_full(void *p);

void free(void *p) {
    /* armed: no scratch buffer; tail_free leaves dtv blocks to the code below */
    if (LIKELY(p != 0) && LIKELY(tail_free(OP_FREE, p, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return REAL_ARMED(free)(p);
    if (UNLIKELY(in_scratch(p))) return;
    if (UNLIKELY(in_dtv(p))) {
        dtv_free(p);
        return;
    }
    __attribute__((musttail)) return free_full(p);
}

__attribute__((noinline)) static void free_full(void *p) {
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct profcc_obj o;
    uint8_t *g = p ? granule((uint64_t)p) : 0; /* once: the filter's byte, and the reuse byte's place */
    int had = !outer && p && take_obj(p, g, &o);
    if (had) profcc_account_free(&o);
    struct op_timer t = timing_start(outer || !p, OP_FREE, had ? o.size : 0);
    if (LIKELY(!in_pool(p))) REAL(free)(p); /* a pool block is never handed to any free */
    uint64_t c = timing_end(&t);
    if (t.on) op_done(OP_FREE, had ? o.size : 0, p, 0, NO_SIZE, c, &t, had ? o.site : NO_SITE, g, 0);
    tls.in_rt = saved;
    if (!outer && p) tail_arm();
}

void cfree(void *p) { free(p); }

__attribute__((noinline)) static void *calloc_full(size_t n, size_t m) {
    FORWARD_AND_RECORD(REAL(calloc)(n, m), n * m, K_CALLOC, OP_CALLOC);
}

void *calloc(size_t n, size_t m) {
    /* armed: not inside pthread_create (the guard is held there), no scratch buffer */
    size_t bytes;
    if (LIKELY(!__builtin_mul_overflow(n, m, &bytes)) &&
        LIKELY(tail_alloc(OP_CALLOC, bytes, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return REAL_ARMED(calloc)(n, m);
    if (UNLIKELY(creating_thread) && m == DTV_ENTRY && n > 2 && &__profcc_native_tls_absent) {
        creating_thread = 0;
        void *p = dtv_calloc(n);
        if (p) return p;
    }
    if (UNLIKELY(scratch != 0) && m != 0 && n <= 4096 / m) {
        void *p = scratch_alloc(n * m);
        if (p) return __builtin_memset(p, 0, n * m);
    }
    __attribute__((musttail)) return calloc_full(n, m);
}

static void *realloc_impl(void *old, size_t n, void *fp) {
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct profcc_obj o;
    uint8_t *go = old ? granule((uint64_t)old) : 0; /* once: the filter's byte, and the reuse byte's place */
    int had = !outer && old && take_obj(old, go, &o);
    /* The allocator's realloc; a pool block moves out of the pool. */
    struct op_timer t = timing_start(outer || UNLIKELY(in_pool(old)), OP_REALLOC, n);
    void *p = UNLIKELY(in_pool(old)) ? pool_realloc(old, n) : REAL(realloc)(old, n);
    uint64_t c = timing_end(&t);
    if (!outer) {
        uint32_t site = NO_SITE;
        if (!p && n != 0 && old) {
            if (had) profcc_put_back(&o); /* failed: the old block is still the program's */
        } else {
            if (had) profcc_account_free(&o);
            if (p) site = on_alloc(p, n, K_REALLOC, fp);
        }
        if (LIKELY(!in_pool(old)) && counted(&t))
            op_done(OP_REALLOC, n, p, old, had ? o.size : NO_SIZE, c, &t, site,
                    p == old ? go : granule((uint64_t)p), go);
    }
    tls.in_rt = saved;
    if (!outer) tail_arm();
    return p;
}

/* Its own frame, so the tail path's caller (realloc) keeps a small one. */
__attribute__((noinline)) static void *realloc_full(void *old, size_t n) { return realloc_impl(old, n, FP()); }

void *realloc(void *old, size_t n) {
    /* realloc(0, n) is a malloc (an interpreter's allocation hook makes every new block so:
     * Lua's l_alloc) and takes its tail path, filed as realloc (armed: no scratch buffer). */
    if (!old && LIKELY(tail_alloc(OP_REALLOC, n, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return REAL_ARMED(realloc)(old, n);
    if (UNLIKELY(in_dtv(old))) return dtv_realloc(old, n);
    if (UNLIKELY(scratch != 0) && (!old || in_scratch(old))) {
        void *p = scratch_alloc(n);
        if (!p) p = REAL(malloc)(n);
        if (p && old) {
            size_t had = *(size_t *)((char *)old - 16);
            __builtin_memcpy(p, old, had < n ? had : n);
        }
        return p;
    }
    __attribute__((musttail)) return realloc_full(old, n);
}

/* reallocarray is realloc with an overflow check in every allocator (glibc's calls realloc
 * through the PLT, i.e. us): computed here, forwarded to the allocator's realloc. */
void *reallocarray(void *old, size_t n, size_t m) {
    size_t bytes;
    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return 0;
    }
    return realloc_impl(old, bytes, FP());
}

int posix_memalign(void **out, size_t al, size_t n) {
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct op_timer t = timing_start(outer, OP_ALIGNED, n);
    int rc = REAL(posix_memalign)(out, al, n);
    uint64_t c = timing_end(&t);
    if (LIKELY(!outer)) {
        void *p = rc == 0 ? *out : 0;
        uint32_t site = p ? on_alloc(p, n, K_POSIX_MEMALIGN, FP()) : NO_SITE;
        if (counted(&t)) op_done(OP_ALIGNED, n, p, 0, NO_SIZE, c, &t, site, granule((uint64_t)p), 0);
    }
    tls.in_rt = saved;
    return rc;
}

void *aligned_alloc(size_t al, size_t n) { FORWARD_AND_RECORD(REAL(aligned_alloc)(al, n), n, K_ALIGNED_ALLOC, OP_ALIGNED); }

void *memalign(size_t al, size_t n) { FORWARD_AND_RECORD(REAL(memalign)(al, n), n, K_MEMALIGN, OP_ALIGNED); }

void *valloc(size_t n) { FORWARD_AND_RECORD(REAL(valloc)(n), n, K_VALLOC, OP_ALIGNED); }

void *pvalloc(size_t n) { FORWARD_AND_RECORD(REAL(pvalloc)(n), n, K_PVALLOC, OP_ALIGNED); }

/* For the allocator analysis: the real allocator's usable size of a block it handed out. */
size_t profcc_usable(void *p) { return p && !in_pool(p) && !in_dtv(p) ? REAL(usable)(p) : 0; }

size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    if (UNLIKELY(in_pool(p))) return pool_size_of(p);
    if (UNLIKELY(in_dtv(p))) return ((struct dtv_head *)p - 1)->bytes;
    return REAL(usable)(p);
}

/* ---- operator new / delete ---- */

typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* Through the malloc symbol (ours, forwarding without recording while the guard is set, or the
 * program's own). The new_handler loop of [new.delete.single]; nothrow variants return null. */
static inline void *raw_alloc(size_t n, size_t al) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    void *p;
    if (al) {
        if (al < sizeof(void *)) al = sizeof(void *);
        if (posix_memalign(&p, al, n) != 0) p = 0;
    } else {
        p = malloc(n);
    }
    tls.in_rt = saved;
    return p;
}

__attribute__((noinline)) static void *new_slow(size_t n, size_t al, int nothrow) {
    for (;;) {
        void *p = raw_alloc(n, al);
        if (p) return p;
        new_handler_fn h = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : 0;
        if (!h) {
            if (nothrow) return 0;
            if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
            abort();
        }
        h();
    }
}

static inline void *new_impl(size_t n, size_t al, int nothrow) {
    void *p = raw_alloc(n, al);
    if (UNLIKELY(!p)) p = new_slow(n, al, nothrow);
    return p;
}

#define NEW(name, params, n, al, nothrow, kind)                                           \
    void *name params {                                                                   \
        uint32_t outer = nested_call();                                                  \
        struct op_timer tm = timing_start(outer, OP_NEW, (n));                            \
        void *p = new_impl((n), (al), (nothrow));                                         \
        uint64_t c = timing_end(&tm);                                                     \
        if (LIKELY(!outer)) {                                                             \
            uint32_t site = NO_SITE;                                                      \
            tls.in_rt = 1;                                                                \
            if (LIKELY(p != 0)) site = on_alloc(p, (n), (kind), FP());             \
            if (counted(&tm)) op_done(OP_NEW, (n), p, 0, NO_SIZE, c, &tm, site, granule((uint64_t)p), 0); \
            tls.in_rt = 0;                                                                \
            tail_arm();                                                                   \
        }                                                                                 \
        return p;                                                                         \
    }

typedef struct { char c; } nothrow_t; /* std::nothrow_t const& : only its address is passed */

NEW(new_full, (size_t n), n, 0, 0, K_NEW)

/* The next operator new(size_t) (libstdc++'s; 0: none, always the full path), resolved once. */
void *_Znwm(size_t n) {
    new_fn nw = __atomic_load_n(&next_new, __ATOMIC_ACQUIRE);
    /* libstdc++'s new[] jumps to operator new: at the marked slot itself, which the
     * program's loop of new calls would also be, but the slot holds a call of new[]. The
     * flag stays set past later tail-path calls: their marker, checked here, rules them
     * out just as well (their slot holds another call instruction's return address). */
    if (UNLIKELY(tls.tail_array)) {
        if (LIKELY(nw != 0) && tail_inside()) __attribute__((musttail)) return nw(n);
        tls.tail_array = 0;
    }
    if (LIKELY(nw != 0) && LIKELY(tail_alloc(OP_NEW, n, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return nw(n); /* its malloc runs inside: not counted again */
    __attribute__((musttail)) return new_full(n);
}
NEW(new_array_full, (size_t n), n, 0, 0, K_NEW_ARRAY)

/* new[] likewise (libstdc++'s calls operator new, which then runs inside it: forwarded). */
void *_Znam(size_t n) {
    new_fn nw = __atomic_load_n(&next_new_array, __ATOMIC_ACQUIRE);
    /* (inside a tail-path call: the full path, which forwards it without the flag) */
    if (LIKELY(nw != 0) && LIKELY(tail_alloc(OP_NEW, n, FP(), __builtin_return_address(0)) == TAIL_TAKEN)) {
        tls.tail_array = 1;
        __attribute__((musttail)) return nw(n);
    }
    __attribute__((musttail)) return new_array_full(n);
}
NEW(_ZnwmRKSt9nothrow_t, (size_t n, const nothrow_t *t), n, 0, 1, K_NEW)
NEW(_ZnamRKSt9nothrow_t, (size_t n, const nothrow_t *t), n, 0, 1, K_NEW_ARRAY)
NEW(_ZnwmSt11align_val_t, (size_t n, size_t al), n, al, 0, K_NEW)
NEW(_ZnamSt11align_val_t, (size_t n, size_t al), n, al, 0, K_NEW_ARRAY)
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const nothrow_t *t), n, al, 1, K_NEW)
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const nothrow_t *t), n, al, 1, K_NEW_ARRAY)

static inline void raw_free(void *p) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    free(p);
    tls.in_rt = saved;
}

/* Remove and account (before the real free), free through the malloc family, time it. */
static inline void delete_impl(void *p) {
    if (UNLIKELY(nested_call()) || !p) {
        raw_free(p);
        return;
    }
    tls.in_rt = 1;
    struct profcc_obj o;
    uint8_t *g = granule((uint64_t)p); /* once: the filter's byte, and the reuse byte's place */
    int had = take_obj(p, g, &o);
    if (had) profcc_account_free(&o);
    struct op_timer t = timing_start(0, OP_DELETE, had ? o.size : 0);
    free(p); /* guard set: forwards */
    uint64_t c = timing_end(&t);
    if (t.on) op_done(OP_DELETE, had ? o.size : 0, p, 0, NO_SIZE, c, &t, had ? o.site : NO_SITE, g, 0);
    tls.in_rt = 0;
    tail_arm();
}

__attribute__((noinline)) static void delete_full(void *p) { delete_impl(p); }

/* On the tail path a delete is a free, counted as delete, jumping to the allocator's free. */
#define DELETE(name, params)                                                                   \
    void name params {                                                                         \
        if (LIKELY(p != 0) && /* armed: no scratch; tail_free leaves dtv blocks */            \
            LIKELY(tail_free(OP_DELETE, p, FP(), __builtin_return_address(0))))                \
            return REAL_ARMED(free)(p);                                                        \
        return delete_full(p);                                                                 \
    }

DELETE(_ZdlPv, (void *p))
DELETE(_ZdaPv, (void *p))
DELETE(_ZdlPvm, (void *p, size_t n))
DELETE(_ZdaPvm, (void *p, size_t n))
DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const nothrow_t *t))
DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const nothrow_t *t))
DELETE(_ZdlPvSt11align_val_t, (void *p, size_t al))
DELETE(_ZdaPvSt11align_val_t, (void *p, size_t al))
DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t al))
DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t al))
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const nothrow_t *t))
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const nothrow_t *t))

/* ---- mmap family: raw syscalls, never a lazy dlsym ---- */

/* A call the allocator made inside the program's operation (on mutex `m`, else 0): timed
 * for the analysis. */
#define CHANNEL_ON(ch, m, call)                                                     \
    ({                                                                              \
        uint32_t op_ = op_running();                                                \
        uint64_t t0_ = UNLIKELY(op_ != 0) ? __builtin_ia32_rdtsc() : 0;             \
        long r_ = (call);                                                           \
        if (UNLIKELY(op_ != 0)) {                                                   \
            int e_ = errno;                                                         \
            profcc_alloc_channel((ch), op_ - 1, __builtin_ia32_rdtsc() - t0_, (m)); \
            errno = e_;                                                             \
        }                                                                           \
        r_;                                                                         \
    })
#define CHANNEL(ch, call) CHANNEL_ON(ch, 0, call)

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    /* sets errno, returns -1 */
    long r = CHANNEL(CH_MMAP, syscall(SYS_mmap, addr, len, prot, flags, fd, off));
    void *p = (void *)r;
    if (p != MAP_FAILED && LIKELY(!not_programs())) {
        tls.in_rt = 1;
        profcc_on_mmap(p, len, FP());
        tls.in_rt = 0;
    }
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

int munmap(void *addr, size_t len) {
    if (LIKELY(!not_programs())) {
        tls.in_rt = 1;
        profcc_on_munmap(addr, len);
        tls.in_rt = 0;
    }
    return (int)CHANNEL(CH_MUNMAP, syscall(SYS_munmap, addr, len));
}

int madvise(void *addr, size_t len, int advice) {
    return (int)CHANNEL(CH_MADVISE, syscall(SYS_madvise, addr, len, advice));
}

/* Returns an error number, not -1 and errno (the probe counts it as the madvise channel). */
int posix_madvise(void *addr, size_t len, int advice) {
    if (advice == POSIX_MADV_DONTNEED) return 0; /* glibc's: a no-op, no system call */
    int saved = errno;
    long r = CHANNEL(CH_MADVISE, syscall(SYS_madvise, addr, len, advice));
    int e = r < 0 ? errno : 0;
    errno = saved; /* like glibc's: errno untouched */
    return e;
}

int mprotect(void *addr, size_t len, int prot) {
    return (int)CHANNEL(CH_MPROTECT, syscall(SYS_mprotect, addr, len, prot));
}

/* glibc's own (it keeps the break in libc's state): exported under this name too. */
void *__sbrk(intptr_t inc);
void *sbrk(intptr_t inc) { return (void *)CHANNEL(CH_SBRK, (long)__sbrk(inc)); }
/* brk moves the same break: the sbrk channel (the probe counts an import of either). glibc's
 * own is not exported under another name: done as glibc does, the system call and then the
 * break glibc's sbrk reads. */
extern void *__curbrk;
int brk(void *end) {
    void *now = (void *)CHANNEL(CH_SBRK, syscall(SYS_brk, end));
    __curbrk = now;
    if ((uintptr_t)now < (uintptr_t)end) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* For the wrappers of libnuma's allocators (numa_wrap_libnuma.c): run a call unrecorded, and
 * record a mapping made inside a library with the stack above `fp`. */
int profcc_quiet_enter(void) {
    int was = tls.in_rt;
    tls.in_rt = 1;
    return was;
}
void profcc_quiet_leave(int was) { tls.in_rt = was; }
void profcc_record_mapping(void *p, size_t len, void *fp) {
    if (LIKELY(!tls.in_rt)) {
        tls.in_rt = 1;
        profcc_on_mmap(p, len, fp);
        tls.in_rt = 0;
    }
}

/* ---- waits (NUMA analysis: migration risk, rt/src/analyses/numa.rs) ----
 * A thread that blocks may wake on another node (NumaPerf's proxy for migrations): each
 * contended mutex or spin lock, each condition-variable wait, each barrier wait but the last
 * arrival's, each semaphore wait that found it at zero is counted for the waiting thread.
 * Locks are tried first: an uncontended lock costs one trylock, as the lock itself would. The
 * real functions come from dlsym(RTLD_NEXT) in a dynamic link, from libc.a's internal names
 * in a static one (the driver's STATIC_LINK_FLAGS pull them in). */
enum { WAIT_MUTEX, WAIT_SPIN, WAIT_COND, WAIT_BARRIER, WAIT_SEM };
void profcc_numa_waited(int kind);
static void waited(int kind) {
    if (LIKELY(!not_programs())) {
        int e = errno;
        tls.in_rt = 1;
        profcc_numa_waited(kind);
        tls.in_rt = 0;
        errno = e;
    }
}


int pthread_spin_lock(pthread_spinlock_t *l) {
    if (pthread_spin_trylock(l) == 0) return 0;
    while (pthread_spin_trylock(l) != 0) __builtin_ia32_pause();
    waited(WAIT_SPIN);
    return 0;
}

typedef int (*cond_wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*barrier_wait_fn)(pthread_barrier_t *);
typedef int (*sem_wait_fn)(sem_t *);
/* For the link-time wrappers (numa_wrap.c): a wait they saw. */
void profcc_wait_seen(int kind) { waited(kind); }

int __pthread_cond_wait(pthread_cond_t *, pthread_mutex_t *) __attribute__((weak));
int __pthread_cond_timedwait(pthread_cond_t *, pthread_mutex_t *, const struct timespec *)
    __attribute__((weak));
int __pthread_barrier_wait(pthread_barrier_t *) __attribute__((weak));
int __new_sem_wait(sem_t *) __attribute__((weak));
int __pthread_mutex_lock(pthread_mutex_t *) __attribute__((weak));
int __pthread_mutex_trylock(pthread_mutex_t *) __attribute__((weak));
int __pthread_mutex_unlock(pthread_mutex_t *) __attribute__((weak));
typedef int (*mutex_lock_fn)(pthread_mutex_t *);

/* The real `name` (dlsym, once), else `fallback` (a static link's libc.a name). */
#define REAL_WAIT(type, name, fallback)                                                         \
    ({                                                                                          \
        static type f_;                                                                         \
        type f = __atomic_load_n(&f_, __ATOMIC_ACQUIRE);                                        \
        if (!f) {                                                                               \
            f = (type)dlsym(RTLD_NEXT, name);                                                   \
            if (!f) f = fallback;                                                               \
            __atomic_store_n(&f_, f, __ATOMIC_RELEASE);                                         \
        }                                                                                       \
        f;                                                                                      \
    })

/* The allocator's mutexes inside the program's operation (the allocator analysis): each
 * lock and trylock is counted by how it went, and the time from taking a mutex to its unlock
 * inside the same operation is its hold time. */
static inline void took(pthread_mutex_t *m) {
    if (tls.nheld < HELD) {
        tls.held[tls.nheld] = m;
        tls.held_at[tls.nheld++] = __builtin_ia32_rdtsc();
    }
}

/* libc's own, exported under these names: no dlsym (which may allocate, and an allocator
 * that is initialising takes its locks: jemalloc's first malloc would reach dlsym again). */
#define REAL_TRYLOCK                                                                        \
    (__pthread_mutex_trylock ? __pthread_mutex_trylock                                      \
                             : REAL_WAIT(mutex_lock_fn, "pthread_mutex_trylock", 0))
#define REAL_UNLOCK                                                                         \
    (__pthread_mutex_unlock ? __pthread_mutex_unlock                                        \
                            : REAL_WAIT(mutex_lock_fn, "pthread_mutex_unlock", 0))

int pthread_mutex_lock(pthread_mutex_t *m) {
    int r = REAL_TRYLOCK(m);
    uint32_t op = op_running();
    if (UNLIKELY(op != 0) && r != EBUSY) {
        profcc_alloc_channel(CH_MUTEX, op - 1, 0, m);
        if (r == 0) took(m);
    }
    if (r != EBUSY) return r; /* taken, or an error the lock would give too */
    r = (int)CHANNEL_ON(CH_MUTEX_WAIT, m, REAL_WAIT(mutex_lock_fn, "pthread_mutex_lock", __pthread_mutex_lock)(m));
    if (UNLIKELY(op != 0) && r == 0) took(m);
    waited(WAIT_MUTEX);
    return r;
}

int pthread_mutex_trylock(pthread_mutex_t *m) {
    int r = REAL_TRYLOCK(m);
    uint32_t op = op_running();
    if (UNLIKELY(op != 0)) {
        int e = errno;
        profcc_alloc_channel(r == EBUSY ? CH_MUTEX_BUSY : CH_MUTEX_TRY, op - 1, 0, m);
        if (r == 0) took(m);
        errno = e;
    }
    return r;
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    uint32_t op = op_running();
    if (UNLIKELY(op != 0)) {
        for (uint32_t i = tls.nheld; i-- > 0;) {
            if (tls.held[i] != m) continue;
            uint64_t held = __builtin_ia32_rdtsc() - tls.held_at[i];
            tls.held[i] = tls.held[--tls.nheld];
            tls.held_at[i] = tls.held_at[tls.nheld];
            int e = errno;
            profcc_alloc_channel(CH_MUTEX_HOLD, op - 1, held, m);
            errno = e;
            break;
        }
    }
    return REAL_UNLOCK(m);
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    int r = REAL_WAIT(cond_wait_fn, "pthread_cond_wait", __pthread_cond_wait)(c, m);
    waited(WAIT_COND);
    return r;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
    int r = REAL_WAIT(cond_timedwait_fn, "pthread_cond_timedwait", __pthread_cond_timedwait)(c, m, t);
    waited(WAIT_COND);
    return r;
}

int pthread_barrier_wait(pthread_barrier_t *b) {
    int r = REAL_WAIT(barrier_wait_fn, "pthread_barrier_wait", __pthread_barrier_wait)(b);
    if (r == 0) waited(WAIT_BARRIER); /* the last arrival (SERIAL_THREAD) did not wait */
    return r;
}

int sem_wait(sem_t *s) {
    int e = errno;
    if (sem_trywait(s) == 0) return 0;
    errno = e;
    int r = REAL_WAIT(sem_wait_fn, "sem_wait", __new_sem_wait)(s);
    waited(WAIT_SEM);
    return r;
}

void *mremap(void *old, size_t old_len, size_t len, int flags, ...) {
    void *want = 0;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    long r = CHANNEL(CH_MREMAP, syscall(SYS_mremap, old, old_len, len, flags, want));
    void *p = (void *)r;
    if (p != MAP_FAILED && LIKELY(!not_programs())) {
        tls.in_rt = 1;
        profcc_on_mremap(old, old_len, p, len);
        tls.in_rt = 0;
    }
    return p;
}

/* ---- threads ---- */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;

/* glibc's pthread_create in a static link (libc.a defines `pthread_create` as a weak alias of
 * it): the driver adds `-u __pthread_create` to -static links, since this interposer keeps
 * libc.a's member out otherwise. Null in a dynamic link (libc.so does not export it). */
extern int __pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
    __attribute__((weak));

/* The real pthread_create, resolved once. dlvsym/dlsym may allocate; those mallocs are forwarded
 * (guard set) and never reach pthread_create, so resolution cannot recurse. A static binary has
 * no RTLD_NEXT definition: glibc's `__pthread_create` then. */
static create_fn resolve_create(void) {
    create_fn f = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
    if (LIKELY(f != 0)) return f;
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    f = (create_fn)dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
    if (!f) f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    if (!f || f == pthread_create) f = __pthread_create;
    tls.in_rt = saved;
    if (f) __atomic_store_n(&real_create, f, __ATOMIC_RELEASE);
    return f;
}

static void thread_exiting(void *unused) {
    (void)unused;
    profcc_thread_exiting();
}

/* The thread ends when its start routine returns, calls pthread_exit or is cancelled: the
 * runtime hears of it in each case (a cleanup handler), so its per-thread resources are
 * recycled (rt/src/counts.rs). */
static void *user_trampoline(void *rec) {
    void *(*fn)(void *);
    void *arg;
    void *ret;
    tls.in_rt = 1;
    profcc_thread_started(rec, &fn, &arg);
    /* The walker's top for this thread: no frame from here up is the program's. */
    tls.stack_hi = (uintptr_t)FP();
    tls.in_rt = 0;
    pthread_cleanup_push(thread_exiting, 0);
    ret = fn(arg);
    pthread_cleanup_pop(1);
    return ret;
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    create_fn real = resolve_create();
    if (UNLIKELY(!real)) return EAGAIN;
    if (UNLIKELY(tls.in_rt)) return real(t, attr, fn, arg);
    tls.in_rt = 1;
    void *rec = profcc_thread_prepare(fn, arg, FP());
    /* glibc's own allocations for the thread (TLS blocks) are not the program's: guard stays on. */
    creating_thread = 1;
    int rc = rec ? real(t, attr, user_trampoline, rec) : real(t, attr, fn, arg);
    creating_thread = 0;
    if (rc != 0 && rec) profcc_thread_failed(rec);
    tls.in_rt = 0;
    return rc;
}

/* A runtime thread's start record lives in a static slot, in no heap at all: the runtime never
 * calls the program's allocator (jemalloc, mimalloc, ... when the program uses one; glibc's heap
 * when it does not, where even a 16-byte block moves every later block of the program, see
 * DESIGN.md "Ways a profiler disturbs"). What glibc itself allocates for the thread (malloc with
 * the guard set) goes to the program's allocator, as it does for the program's own threads. */
struct internal_start { void *(*fn)(void *); void *arg; int busy; };
static struct internal_start internal_slots[4];

static void *internal_trampoline(void *p) {
    struct internal_start *slot = p;
    struct internal_start s = *slot;
    __atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
    tls.in_rt = 1;                  /* a runtime thread never records anything */
    tls.tid_plus1 = 0xffffffffu;    /* threads::INTERNAL + 1 (wraps to the INTERNAL marker) */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, 0); /* process signals go to the program's threads */
    return s.fn(s.arg);
}

/* Start a detached, unregistered runtime thread with the real pthread_create. 0 on success. */
int profcc_spawn_internal(void *(*fn)(void *), void *arg) {
    create_fn real = resolve_create();
    if (!real) return -1;
    struct internal_start *s = 0;
    for (unsigned i = 0; i < sizeof internal_slots / sizeof *internal_slots && !s; i++)
        if (!__atomic_exchange_n(&internal_slots[i].busy, 1, __ATOMIC_ACQUIRE)) s = &internal_slots[i];
    if (!s) return -1; /* more runtime threads starting at once than slots */
    s->fn = fn;
    s->arg = arg;
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    pthread_t t;
    int rc = real(&t, &a, internal_trampoline, s);
    pthread_attr_destroy(&a);
    tls.in_rt = saved;
    if (rc != 0) __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
    return rc;
}

/* Our own allocation functions, whichever definitions the link chose for the symbols. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
static void *own_malloc(size_t) __attribute__((alias("malloc")));
static void *own_calloc(size_t, size_t) __attribute__((alias("calloc")));
static void *own_realloc(void *, size_t) __attribute__((alias("realloc")));
static void own_free(void *) __attribute__((alias("free")));
#pragma GCC diagnostic pop
static int own_allocator_linked(void) {
    return (void *)malloc == (void *)own_malloc && (void *)calloc == (void *)own_calloc &&
           (void *)realloc == (void *)own_realloc && (void *)free == (void *)own_free;
}

/* ---- which allocator the program's malloc calls reach (the profile's `allocator` lines) ----
 * The forwarding target when our interposers won the link (resolved now if no malloc ran yet),
 * else the program's own malloc. Lines as the allocator probe writes them (ident.c, shared
 * with allocator-probe/). Not async-signal-safe: the writer skips it in a fatal-signal dump. */
size_t profcc_alloc_ident(void *malloc_fn, void *mallctl, char *buf, size_t cap);
size_t profcc_allocator_lines(char *buf, size_t cap) {
    void *m = (void *)malloc;
    if (own_allocator_linked()) {
        m = resolved_or_wait() ? (void *)__atomic_load_n(&next_alloc.malloc, __ATOMIC_ACQUIRE)
                               : (void *)__libc_malloc;
    }
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1; /* what dlsym allocates (its error messages) is not the program's */
    size_t n = profcc_alloc_ident(m, 0, buf, cap);
    tls.in_rt = saved;
    return n;
}

/* Bounds of the calling thread's stack. `is_main`: use __libc_stack_end (no /proc read). */
void profcc_stack_bounds_self(int is_main, uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = 0;
    if (is_main) {
        uintptr_t top = ((uintptr_t)__libc_stack_end + 4095) & ~(uintptr_t)4095;
        struct rlimit rl;
        uintptr_t size = 8u << 20;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) size = rl.rlim_cur;
        if (size > (1ul << 30) || rl.rlim_cur == RLIM_INFINITY) size = 1ul << 30;
        *hi = top;
        *lo = top > size ? top - size : 0;
        return;
    }
    _Alignas(16) char buf[4096];
    struct scratch s = {buf, buf, buf + sizeof buf};
    /* Only when every function that may allocate or free the blocks is ours (not in a -static
     * link, where libc.a's malloc/free/realloc win). */
    if (own_allocator_linked()) {
        tail_sync(); /* disarmed: the tail path does not look for scratch blocks */
        scratch = &s;
    }
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *addr = 0;
        size_t size = 0;
        if (pthread_attr_getstack(&a, &addr, &size) == 0) {
            *lo = (uintptr_t)addr;
            *hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&a);
    }
    scratch = 0;
}

/* ---- frame-pointer walker ---- */

/* Walk the frame-pointer chain starting at `fp`, a frame of one of this file's interposers (so
 * its return address is read without checks). Every further frame pointer must be 8-aligned,
 * strictly above the previous one and below the thread's stack top, and the walk must start on
 * the thread's own stack (not a sigaltstack or coroutine stack): garbage frame pointers from
 * code built without them end the walk, never fault. Returns the number of return addresses.
 * A program with a module built without frame pointers (the ROI-only build: the pass defines
 * `__profcc_no_frame_pointers` there) gets the first frame only: a chain through such code
 * could pass every check and still be someone's data. */
extern void __profcc_no_frame_pointers(void) __attribute__((weak));
__attribute__((noinline)) unsigned profcc_walk(void *start_fp, uint64_t *out, unsigned max) {
    if (max == 0 || !start_fp) return 0;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t fp = (uintptr_t)start_fp;
    unsigned n = 0;
    out[n++] = ((uintptr_t *)fp)[1];
    if (__profcc_no_frame_pointers) return n;
    uintptr_t lo = tls.stack_lo, hi = tls.stack_hi;
    if (hi == 0 || here < lo || here >= hi || fp < here || fp + 16 > hi) return n;
    uintptr_t prev = fp;
    fp = ((uintptr_t *)fp)[0];
    while (n < max) {
        if (fp <= prev || (fp & 7) != 0 || fp + 16 > hi) break;
        uintptr_t ret = ((uintptr_t *)fp)[1];
        if (ret < 4096 || ret >= (1ul << 47)) break; /* not a user-space code address */
        if (((uintptr_t *)fp)[0] == hi) break; /* returns into user_trampoline: the runtime's */
        out[n++] = ret;
        prev = fp;
        fp = ((uintptr_t *)fp)[0];
    }
    return n;
}

/* Whether allocation stacks keep their first frame only (stack.rs, the profile's note). */
int profcc_shallow_stacks(void) { return __profcc_no_frame_pointers != 0; }

/* Walk from the caller of this function (for `stack::capture` from Rust code that has no frame
 * pointers of its own: the walk then starts at the nearest C/C++ frame that has one). */
__attribute__((noinline)) unsigned profcc_walk_here(uint64_t *out, unsigned max) {
    return profcc_walk(__builtin_frame_address(0), out, max);
}

/* ---- the final dump before `_exit`/`_Exit`, `abort` and a failed `assert` (writer.rs, "dump
 * lifecycle": once per process, not in a vfork child, not when the runtime itself aborts). These
 * run no atexit handler, so without them the profile would be lost without a word. What glibc
 * calls internally (its own aborts on heap corruption, `quick_exit`) does not come through here.
 * The real `abort`/`__assert_fail` are resolved only when called: nothing at start. ---- */
void profcc_before_exit(uint32_t how);

__attribute__((noreturn)) void _exit(int status) {
    profcc_before_exit(0);
    for (;;) syscall(SYS_exit_group, status);
}

__attribute__((noreturn)) void _Exit(int status) { _exit(status); }

static void *next_symbol(const char *name) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    void *f = dlsym(RTLD_NEXT, name);
    tls.in_rt = saved;
    return f;
}

__attribute__((noreturn)) void abort(void) {
    profcc_before_exit(1);
    void (*real)(void) = (void (*)(void))next_symbol("abort");
    if (real) real();
    /* No libc abort found (cannot happen with glibc): what it does, minus its locking. */
    signal(SIGABRT, SIG_DFL);
    raise(SIGABRT);
    for (;;) syscall(SYS_exit_group, 127);
}

__attribute__((noreturn)) void __assert_fail(const char *what, const char *file, unsigned int line,
                                             const char *function) {
    profcc_before_exit(2);
    void (*real)(const char *, const char *, unsigned int, const char *) =
        (void (*)(const char *, const char *, unsigned int, const char *))next_symbol("__assert_fail");
    if (real) real(what, file, line, function);
    abort();
}

/* ---- initialisation before main, even when no instrumented module and no interposed call
 * triggers it (a program with its own malloc). Priority 101: before every default-priority
 * static constructor, so the exit dump's atexit still runs after their destructors. ---- */
void profcc_ctor_init(void);

/* Null in a static (non-PIE) executable. */
extern char _DYNAMIC[] __attribute__((weak, visibility("hidden")));

__attribute__((constructor(101))) static void profcc_ctor(void) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    profcc_ctor_init();
    /* A -static link: libc.a's strong malloc/free/realloc (in the member that also defines the
     * __libc_* functions forwarded to) win over the weak interposers; the one thing of a static
     * program profcc cannot observe, said once. */
    if (!_DYNAMIC && (void *)malloc != (void *)own_malloc) {
        static const char note[] = "profcc: note: static executable: glibc's malloc/free/realloc "
                                   "are linked, not profcc's; their blocks are not in the profile\n";
        (void)!write(2, note, sizeof note - 1);
    }
    tls.in_rt = saved;
}
