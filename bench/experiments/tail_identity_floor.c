/* A design prototype, not the runtime (issue 46; docs/history/default.md, "The allocation
 * path at a2d54ae, and the tail-identity floor"): what an allocation path costs that records
 * every small object's identity without a stack walk or an object map, on malloc(40)/free
 * pairs. Built and timed by hand:
 *
 *   clang-22 -O2 -fno-omit-frame-pointer -DMODE=0 -DPAIRS=40000000L tail_identity_floor.c -o q0 -lpthread
 *   clang-22 -O2 -fno-omit-frame-pointer -DMODE=1 -DPAIRS=40000000L tail_identity_floor.c -o q1 -lpthread
 *   farm-bench -n 5 --vs "./q0 2" -- ./q1 2      (or hyperfine -N --warmup 1 './q0 2' './q1 2';
 *                                               docs/benchmarks.md, "Paired A/B timings")
 *
 * MODE 0: plain malloc/free behind noinline wrappers (as an interposer forwards). MODE 1, per
 * malloc: a sampling countdown and the thread's totals; the caller's two return addresses
 * (frame pointers) looked up in a per-thread direct-mapped key cache (a miss would walk the
 * whole stack once and intern it: the key's stack); the real call; one u32 store into a start
 * shadow, a word per 16-byte granule of the address space (key id | size in granules). Per free:
 * the start shadow's word loaded and cleared, the block's line-shadow words checked (a hot or
 * retired line would take the full path) and zeroed, the totals, the real free. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#ifndef MODE
#define MODE 1
#endif
#define START_SHADOW 0x300000000000ul /* u32 per 16-byte granule of 2^47: 32 TiB */
#define LINE_SHADOW 0x100000000000ul  /* u64 per 64-byte line: 16 TiB */
#define HOT (1ul << 63)
#define RETIRED (1ul << 62)

struct kc {
    uintptr_t r0, r1;
    uint32_t id;
};
static __thread struct kc cache[64];
static __thread int64_t left = 1 << 20;
static __thread uint64_t allocs, bytes, frees, slow_keys, slow_lines;
static uint32_t next_id = 1;

__attribute__((noinline)) static uint32_t slow_key(uintptr_t r0, uintptr_t r1, unsigned h) {
    slow_keys++;
    uint32_t id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED); /* + a full walk, interned */
    cache[h] = (struct kc){r0, r1, id};
    return id;
}
__attribute__((noinline)) static void slow_sample(size_t n) { left = 1 << 20; (void)n; }
__attribute__((noinline)) static void slow_line(uint64_t *w) { slow_lines++; (void)w; }

static inline uint32_t key_id(uintptr_t r0, uintptr_t r1) {
    unsigned h = (unsigned)((r0 ^ (r1 >> 3)) >> 2) & 63;
    struct kc *c = &cache[h];
    if (__builtin_expect(c->r0 == r0 && c->r1 == r1, 1)) return c->id;
    return slow_key(r0, r1, h);
}

__attribute__((noinline)) void *pmalloc(size_t n) {
#if MODE == 0
    return malloc(n);
#else
    uintptr_t *fp = __builtin_frame_address(0);
    uintptr_t r0 = fp[1];
    uintptr_t *cfp = (uintptr_t *)fp[0];
    uintptr_t r1 = ((uintptr_t)cfp > (uintptr_t)fp && (uintptr_t)cfp - (uintptr_t)fp < (1u << 20)) ? cfp[1] : 0;
    if ((left -= (int64_t)n) <= 0) slow_sample(n);
    allocs++;
    bytes += n;
    uint32_t id = key_id(r0, r1);
    void *p = malloc(n);
    if (__builtin_expect(p != 0 && n < (1u << 16), 1))
        ((uint32_t *)START_SHADOW)[(uintptr_t)p >> 4] = id | ((uint32_t)((n + 15) >> 4) << 20);
    return p;
#endif
}

__attribute__((noinline)) void pfree(void *p) {
#if MODE == 1
    uint32_t *e = &((uint32_t *)START_SHADOW)[(uintptr_t)p >> 4];
    uint32_t v = *e;
    if (v) {
        *e = 0;
        uintptr_t a = (uintptr_t)p, end = a + ((uintptr_t)(v >> 20) << 4);
        for (uintptr_t line = a & ~63ul; line < end; line += 64) {
            uint64_t *w = &((uint64_t *)LINE_SHADOW)[line >> 6];
            uint64_t x = *w;
            if (__builtin_expect(x & (HOT | RETIRED), 0)) slow_line(w);
            else if (x) *w = 0;
        }
    }
    frees++;
#endif
    free(p);
}

/* The shadows, reserved before main as the runtime reserves its line shadow. */
__attribute__((constructor)) static void reserve(void) {
    if (mmap((void *)START_SHADOW, 1ul << 45, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED ||
        mmap((void *)LINE_SHADOW, 1ul << 44, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
}

/* The bench's kernel itself, its calls through the wrappers above. */
#define malloc(n) pmalloc(n)
#define free(p) pfree(p)
#include "../kernels/alloc_pairs.c"
