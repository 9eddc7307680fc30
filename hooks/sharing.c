/* Cache-line sharing: hook bodies compiled to bitcode with counting.c (passes/build.rs) and
 * inlined the same way. Their cold door is next door, in sharing_door.c (compiled into the
 * runtime), then rt/src/sharing.rs; the address map and the shadow word are defined in the
 * profcc-abi crate (abi/src/lib.rs) and reach C through profcc_abi.h.
 *
 * One load of the line's shadow word and one compare per checked access; only an ownership
 * change, a first read by a thread, a tracked ("hot") line's sampled access or a write-volume
 * sample leaves through the cold door `__profcc_slow`. The pass drops checks an earlier or
 * later access to the same address covers (passes/src/select.rs, `plan`).
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines. */
#include "profcc_hooks.h"

/* On the hooks' side both doors are cold: the calls are laid out away from the fast path.
 * (Not in profcc_hooks.h: a cold definition of the door would be compiled for size.) */
__attribute__((cold, preserve_most)) void __profcc_slow(const void *p, uint64_t *slot, uint64_t info);
__attribute__((cold)) void __profcc_range_slow(const void *p, uint64_t len, uint64_t info,
                                               uint64_t *slot);

/* PROFCC_LINE_SHADOW_OF as an index into the shadow: the inlined code shifts the address and
 * loads with a scaled index off one base register (no mask register in a loop). */
_Static_assert((1 << PROFCC_SHADOW_WORD_SHIFT) == sizeof(uint64_t), "one u64 per line");
static inline uint64_t *shadow_of(const void *p) {
  return &((uint64_t *)PROFCC_LINE_SHADOW)[(uint64_t)p >> PROFCC_LINE_SHIFT];
}

/* Once per function, when it has instrumented reads / writes. */
uint64_t __profcc_fn_me(void) { return __profcc_me; }
uint64_t __profcc_fn_rb(void) { return __profcc_rb; }
uint64_t __profcc_fn_wmask(void) { return __profcc_wmask; }

/* The checkers: the whole check of one access, out of line. Straight-line code calls them
 * instead of inlining a hook (one short call per access keeps the code small and the compile
 * fast); the inlined hooks of loops call them on their cold side. preserve_most: the caller
 * keeps every general register, so a call costs its argument moves. The pass links them
 * into each module as internal, never-inlined functions. `site`: the module-local site whose
 * counter `slot_of` finds in the thread's array: a write's group leader (its count is
 * current: the group counted before the check), a read's own site (only its counter's
 * address matters: it names the site). An immediate at the call: the caller keeps no
 * counter base in a register for its checks.
 *
 * Variants that shorten the call (abi::names::CHECKERS; the code at each access is most of
 * an instrumented object's size): `_c` counts the group first (`++*slot`: the access leads
 * its group, so the caller has no increment of its own), and a read that stands for itself
 * alone (info = its size) calls the entry point of its size, which has no info argument.
 *
 * A read leaves unless the line is hot or this thread has not read it since its last write;
 * on a hot line, one access in fs_sample per thread goes on (the countdown reaches zero). */
#define CHECKER __attribute__((preserve_most, noinline))

/* The module's first global site id (passes/src/metadata.rs defines it in each module). */
extern uint32_t __profcc_site_base;

static inline __attribute__((always_inline)) uint64_t *slot_of(uint64_t site) {
  return __profcc_counts + PROFCC_COUNTER_STRIDE * (uint64_t)(__profcc_site_base + (uint32_t)site);
}

/* The checkers' way to the door, off their fast path: a checker's fast path touches only
 * the registers it needs (preserve_most saves each one it uses, on every call), and its slow
 * path passes its own arguments on unchanged; the counter's address and the info are made
 * here. __profcc_door is for a checker whose info is an argument, __profcc_door_read##n /
 * __profcc_door_write##n (below) for those whose info is implied. The pass links them like
 * the checkers (abi::names::CHECKER_DOORS). */
#define DOOR __attribute__((preserve_most, noinline, cold))
DOOR void __profcc_door(const void *p, uint64_t site, uint64_t info) {
  __profcc_slow(p, slot_of(site), info);
}

static inline __attribute__((always_inline)) int read_due(const void *p) {
  uint64_t w = *shadow_of(p);
  uint64_t rb = __profcc_rb;
  return __builtin_expect((w & (PROFCC_HOT | rb)) != rb, 0) &&
         (!(w & PROFCC_HOT) || --__profcc_hot_cd == 0);
}

/* A write leaves when this thread is the line's last writer and nobody read it since (the
 * shadow word equals the thread's owner word, counters masked out). Nothing is stored to the
 * shadow here. */
static inline __attribute__((always_inline)) int write_due(const void *p) {
  uint64_t w = *shadow_of(p);
  return __builtin_expect((w & PROFCC_WRITE_MASK) != __profcc_me, 0) &&
         (!(w & PROFCC_HOT) || --__profcc_hot_cd == 0);
}

/* The write that takes its group's write-volume sample: also goes on when the group's count
 * hits the thread's sample mask. */
static inline __attribute__((always_inline)) int write_s_due(const void *p, uint64_t site) {
  uint64_t w = *shadow_of(p);
  int sample = (slot_of(site)[PROFCC_COUNT_SLOT] & __profcc_wmask) == 0;
  return __builtin_expect(((w & PROFCC_WRITE_MASK) != __profcc_me) | sample, 0) &&
         (sample || !(w & PROFCC_HOT) || --__profcc_hot_cd == 0);
}

static inline __attribute__((always_inline)) void count(uint64_t site) {
  slot_of(site)[PROFCC_COUNT_SLOT] += 1;
}

CHECKER void __profcc_check_read(const void *p, uint64_t site, uint64_t info) {
  if (read_due(p))
    __profcc_door(p, site, info);
}
CHECKER void __profcc_check_write(const void *p, uint64_t site, uint64_t info) {
  if (write_due(p))
    __profcc_door(p, site, info);
}
CHECKER void __profcc_check_write_s(const void *p, uint64_t site, uint64_t info) {
  if (write_s_due(p, site))
    __profcc_door(p, site, info);
}
CHECKER void __profcc_check_read_c(const void *p, uint64_t site, uint64_t info) {
  count(site);
  if (read_due(p))
    __profcc_door(p, site, info);
}
CHECKER void __profcc_check_write_c(const void *p, uint64_t site, uint64_t info) {
  count(site);
  if (write_due(p))
    __profcc_door(p, site, info);
}
CHECKER void __profcc_check_write_s_c(const void *p, uint64_t site, uint64_t info) {
  count(site);
  if (write_s_due(p, site))
    __profcc_door(p, site, info);
}
#define SIZED_READ(n)                                                                             \
  DOOR void __profcc_door_read##n(const void *p, uint64_t site) { __profcc_door(p, site, n); }    \
  CHECKER void __profcc_check_read##n(const void *p, uint64_t site) {                             \
    if (read_due(p))                                                                              \
      __profcc_door_read##n(p, site);                                                             \
  }                                                                                               \
  CHECKER void __profcc_check_read##n##_c(const void *p, uint64_t site) {                         \
    count(site);                                                                                  \
    if (read_due(p))                                                                              \
      __profcc_door_read##n(p, site);                                                             \
  }
SIZED_READ(1)
SIZED_READ(2)
SIZED_READ(4)
SIZED_READ(8)
SIZED_READ(16)

/* A plain write that stands for itself alone (size n, no extra accesses): `x` packs its group
 * leader and its distance from it (abi: packed_write_site), so the call has one immediate
 * after the address; its door rebuilds the info. */
static inline __attribute__((always_inline)) uint64_t packed_leader(uint64_t x) {
  return x & (((uint64_t)1 << PROFCC_PACKED_DISTANCE_SHIFT) - 1);
}
#define SIZED_WRITE(n)                                                                            \
  DOOR void __profcc_door_write##n(const void *p, uint64_t x) {                                   \
    __profcc_door(p, packed_leader(x),                                                            \
                  n | PROFCC_INFO_WRITE |                                                         \
                      (x >> PROFCC_PACKED_DISTANCE_SHIFT) << PROFCC_INFO_SITE_SHIFT);             \
  }                                                                                               \
  CHECKER void __profcc_check_write##n(const void *p, uint64_t x) {                               \
    if (write_due(p))                                                                             \
      __profcc_door_write##n(p, x);                                                               \
  }                                                                                               \
  CHECKER void __profcc_check_write##n##_c(const void *p, uint64_t x) {                           \
    count(packed_leader(x));                                                                      \
    if (write_due(p))                                                                             \
      __profcc_door_write##n(p, x);                                                               \
  }                                                                                               \
  CHECKER void __profcc_check_write##n##_s(const void *p, uint64_t x) {                           \
    if (write_s_due(p, packed_leader(x)))                                                         \
      __profcc_door_write##n(p, x);                                                               \
  }                                                                                               \
  CHECKER void __profcc_check_write##n##_s_c(const void *p, uint64_t x) {                         \
    count(packed_leader(x));                                                                      \
    if (write_s_due(p, packed_leader(x)))                                                         \
      __profcc_door_write##n(p, x);                                                               \
  }
SIZED_WRITE(1)
SIZED_WRITE(2)
SIZED_WRITE(4)
SIZED_WRITE(8)
SIZED_WRITE(16)

/* The inlined hooks (accesses in loops): one load of the shadow word, one compare; the cold
 * side is one call of the access's checker, which decides again. `site`: a read's own
 * site; `leader`: the site whose counter a write shares (the write's own is `info >>
 * PROFCC_INFO_SITE_SHIFT` sites further). */
void __profcc_read(uint64_t site, const void *p, uint64_t info, uint64_t rb) {
  uint64_t w = *shadow_of(p);
  /* (w & (HOT | rb)) != rb as two tests: no register for HOT | rb in the loop. */
  if (__builtin_expect(!(w & rb) | ((int64_t)w < 0), 0))
    __profcc_check_read(p, site, info);
}

void __profcc_write(uint64_t leader, const void *p, uint64_t info, uint64_t me) {
  uint64_t w = *shadow_of(p);
  if (__builtin_expect((w & PROFCC_WRITE_MASK) != me, 0))
    __profcc_check_write(p, leader, info);
}

/* The group's sampling write: `n` is the group's count (what __profcc_count returned). */
void __profcc_write_s(uint64_t leader, uint64_t n, const void *p, uint64_t info,
                      uint64_t me, uint64_t wmask) {
  uint64_t w = *shadow_of(p);
  int sample = (n & wmask) == 0;
  if (__builtin_expect(((w & PROFCC_WRITE_MASK) != me) | sample, 0))
    __profcc_check_write_s(p, leader, info);
}

/* A fixed-size access longer than a line, or of run-time length (memory intrinsics): every
 * line it covers goes through the runtime. */
void __profcc_range(uint64_t *c, uint64_t leader, const void *p, uint64_t len, uint64_t info) {
  if (len)
    __profcc_range_slow(p, len, info, c + PROFCC_COUNTER_STRIDE * leader);
}
void __profcc_range_n(uint64_t *c, uint64_t local, const void *p, uint64_t len, uint64_t info) {
  c[PROFCC_COUNTER_STRIDE * local + PROFCC_COUNT_SLOT] += 1;
  c[PROFCC_COUNTER_STRIDE * local + PROFCC_BYTES_SLOT] += len;
  if (len)
    __profcc_range_slow(p, len, info, c + PROFCC_COUNTER_STRIDE * local);
}
