/* Cache-line sharing: hook bodies compiled to bitcode with counting.c (passes/build.rs) and
 * inlined the same way. Their cold door is next door, in sharing_door.c (compiled into the
 * runtime), then rt/src/analyses/sharing.rs; the address map and the shadow word are defined in the
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
 * an instrumented object's size): a read that stands for itself alone (info = its size)
 * calls the entry point of its size, which has no info argument. Straight-line code calls
 * them through a gate ("The gates", below) and counts its groups in place.
 *
 * A read leaves unless the line is hot or this thread has not read it since its last write;
 * on a hot line, one access in fs_sample per thread goes on (the countdown reaches zero). */
#define CHECKER __attribute__((preserve_most, noinline))

/* The module's first global site id (passes/src/metadata.rs defines it in each module). */
extern uint32_t __profcc_site_base;

/* A thread word the checkers test (read bit, owner word, counter array, sample mask), loaded
 * where it is used: as a plain TLS read the compiler keeps its address (or value) live across
 * a merged checker's members, one more saved register each. */
#if defined(__x86_64__)
#define CHECKER_TLS(name)                                                                         \
  ({                                                                                              \
    uint64_t v_;                                                                                  \
    __asm__ volatile("movq " #name "@gottpoff(%%rip), %0\n\tmovq %%fs:(%0), %0" : "=r"(v_));     \
    v_;                                                                                           \
  })
#else
#define CHECKER_TLS(name) ((uint64_t)(name))
#endif

static inline __attribute__((always_inline)) uint64_t *slot_of(uint64_t site) {
  uint64_t *counts = (uint64_t *)CHECKER_TLS(__profcc_counts);
  return counts + PROFCC_COUNTER_STRIDE * (uint64_t)(__profcc_site_base + (uint32_t)site);
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

/* More than one thread runs (__profcc_alone is zero: cleared before the first
 * pthread_create, set when one thread is left; rt/src/analyses/sharing.rs): only then does a
 * check read a line's shadow. With one thread nothing is shared (nor counted), and those
 * shadow loads, 8 bytes per line the program touches and often a cache miss of their own,
 * were most of a single-threaded program's checking cost. A checker's callers read the word,
 * never the checker: straight-line code's gates (the pass loads it once per stretch of a
 * block with no call of the program's: a frame that creates the second thread checks its next
 * access) and the inlined loop hooks' cold side. A stale "more than one" (the other threads
 * ended since) costs a whole check, nothing else. */
static inline __attribute__((always_inline)) int sharing_on(void) {
  return __atomic_load_n(&__profcc_alone, __ATOMIC_RELAXED) == 0;
}

/* The checkers' shadow word: its address made in one register (the shadow's base is one bit
 * above any user address shifted; no second register for a 64-bit base), and the tests
 * below spelled so that no 64-bit constant needs a register either: preserve_most saves
 * every register a checker's fast path uses, on every call. */
_Static_assert((PROFCC_LINE_SHADOW & (PROFCC_LINE_SHADOW - 1)) == 0, "the shadow's base is one bit");
_Static_assert(((PROFCC_APP_LIMIT - 1) >> (PROFCC_LINE_SHIFT - PROFCC_SHADOW_WORD_SHIFT)) < PROFCC_LINE_SHADOW,
               "every user address's shadow offset is below the base's bit");
static inline __attribute__((always_inline)) uint64_t checker_word(const void *p) {
  uint64_t a = (uint64_t)p;
#if defined(__x86_64__)
  /* In asm: as C the compiler turns the bit into an add of the base from a second register.
   * The mask keeps the word 8-aligned: the shift is the line's bits less the word's. */
  _Static_assert(PROFCC_SHADOW_WORD_SHIFT == 3, "the asm's mask: 8-byte words");
  __asm__("shrq %1, %0\n\tandq $-8, %0\n\tbtsq %2, %0"
          : "+r"(a)
          : "i"(PROFCC_LINE_SHIFT - PROFCC_SHADOW_WORD_SHIFT), "i"(__builtin_ctzll(PROFCC_LINE_SHADOW))
          : "cc");
#else
  a = ((a >> (PROFCC_LINE_SHIFT - PROFCC_SHADOW_WORD_SHIFT)) & ~(uint64_t)7) | PROFCC_LINE_SHADOW;
#endif
  return *(const uint64_t *)a;
}
static inline __attribute__((always_inline)) int read_due(const void *p) {
  uint64_t w = checker_word(p);
  if (__builtin_expect((int64_t)w < 0, 0))
    return --__profcc_hot_cd == 0;
  uint64_t rb = CHECKER_TLS(__profcc_rb);
  return __builtin_expect((w & rb) != rb, 0);
}

/* A write leaves when this thread is the line's last writer and nobody read it since (the
 * shadow word equals the thread's owner word, counters masked out). Nothing is stored to the
 * shadow here. */
_Static_assert(PROFCC_WRITE_MASK == (PROFCC_HOT | 0xffffffffffffull),
               "WRITE_MASK is the sign bit and the low 48 bits (write_due's shift)");
static inline __attribute__((always_inline)) int write_due(const void *p) {
  uint64_t w = checker_word(p);
  if (__builtin_expect((int64_t)w < 0, 0))
    return --__profcc_hot_cd == 0;
  /* w & WRITE_MASK == me for a word without HOT: the low 48 bits equal (me has no others);
   * the shift in asm, or the compiler holds a 48-bit mask in a register */
  uint64_t d = w ^ CHECKER_TLS(__profcc_me);
#if defined(__x86_64__)
  int differ;
  __asm__("shlq $16, %0" : "+r"(d), "=@ccnz"(differ));
  return __builtin_expect(differ, 0);
#else
  return __builtin_expect((d << 16) != 0, 0);
#endif
}

/* The write that takes its group's write-volume sample: also goes on when the group's count
 * hits the thread's sample mask. */
static inline __attribute__((always_inline)) int write_s_due(const void *p, uint64_t site) {
  if (__builtin_expect((slot_of(site)[PROFCC_COUNT_SLOT] & CHECKER_TLS(__profcc_wmask)) == 0, 0))
    return 1;
  return write_due(p);
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
#define SIZED_READ(n)                                                                             \
  DOOR void __profcc_door_read##n(const void *p, uint64_t site) { __profcc_door(p, site, n); }    \
  CHECKER void __profcc_check_read##n(const void *p, uint64_t site) {                             \
    if (read_due(p))                                                                              \
      __profcc_door_read##n(p, site);                                                             \
  }
SIZED_READ(1)
SIZED_READ(2)
SIZED_READ(4)
SIZED_READ(8)
SIZED_READ(16)

/* A plain write of size n: `x` packs its group leader, its distance from it and the extra
 * reads and writes it stands for (abi: packed_write_site), so the call has one immediate
 * after the address; its door rebuilds the info. */
static inline __attribute__((always_inline)) uint64_t packed_leader(uint64_t x) {
  return x & (((uint64_t)1 << PROFCC_PACKED_DISTANCE_SHIFT) - 1);
}
/* The info bits of the distance and the extra accesses. */
#define PACKED_FIELD(x, from, to) (((x) >> (from)) & (((uint64_t)1 << ((to) - (from))) - 1))
static inline __attribute__((always_inline)) uint64_t packed_extras(uint64_t x) {
  uint64_t d = PACKED_FIELD(x, PROFCC_PACKED_DISTANCE_SHIFT, PROFCC_PACKED_EXTRA_READS_SHIFT);
  uint64_t r = PACKED_FIELD(x, PROFCC_PACKED_EXTRA_READS_SHIFT, PROFCC_PACKED_EXTRA_WRITES_SHIFT);
  uint64_t w = PACKED_FIELD(x, PROFCC_PACKED_EXTRA_WRITES_SHIFT, 32);
  return d << PROFCC_INFO_SITE_SHIFT | r << PROFCC_INFO_EXTRA_READS_SHIFT |
         w << PROFCC_INFO_EXTRA_WRITES_SHIFT;
}
#define SIZED_WRITE(n)                                                                            \
  DOOR void __profcc_door_write##n(const void *p, uint64_t x) {                                   \
    __profcc_door(p, packed_leader(x), n | PROFCC_INFO_WRITE | packed_extras(x));                \
  }                                                                                               \
  CHECKER void __profcc_check_write##n(const void *p, uint64_t x) {                               \
    if (write_due(p))                                                                             \
      __profcc_door_write##n(p, x);                                                               \
  }                                                                                               \
  CHECKER void __profcc_check_write##n##_s(const void *p, uint64_t x) {                           \
    if (write_s_due(p, packed_leader(x)))                                                         \
      __profcc_door_write##n(p, x);                                                               \
  }
SIZED_WRITE(1)
SIZED_WRITE(2)
SIZED_WRITE(4)
SIZED_WRITE(8)
SIZED_WRITE(16)

/* Two to four plain accesses of one epoch, with consecutive sites, checked by one call
 * (abi: merged_checker_arg; the pass places it before the first of them): each member goes
 * through its own read or write check, in access order, exactly as if it had its own call;
 * the call saves the others' call and site immediate. `x`: the first member's site | the
 * members' fields from PROFCC_MERGED_SHIFT, each write | log2(size) << 1, | the first
 * member's distance from its group leader. `_s`: the first writing member is the group's
 * sampling write. */
#define MF PROFCC_MERGED_FIELD_BITS
static inline __attribute__((always_inline)) uint64_t first_site(uint64_t x) {
  return x & (((uint64_t)1 << PROFCC_MERGED_SHIFT) - 1);
}
static inline __attribute__((always_inline)) uint64_t field(uint64_t x, int i) {
  return (x >> (PROFCC_MERGED_SHIFT + MF * i)) & ((1 << MF) - 1);
}
/* The first member's distance from its group leader. */
static inline __attribute__((always_inline)) uint64_t leader_distance(uint64_t x, int k) {
  return x >> (PROFCC_MERGED_SHIFT + MF * k);
}
/* Member i of k through the door: its own site, its info. */
static inline __attribute__((always_inline)) void door_member(const void *p, uint64_t x, int i,
                                                              int k) {
  uint64_t f = field(x, i), n = (uint64_t)1 << ((f >> 1) & 3);
  uint64_t site = first_site(x) + i, d = leader_distance(x, k) + i;
  if (f & 1)
    __profcc_door(p, site - d, n | PROFCC_INFO_WRITE | d << PROFCC_INFO_SITE_SHIFT);
  else
    __profcc_door(p, site, n);
}
/* One door per member of each merged checker, with the checker's own arguments: the
 * checker's slow side moves no register (preserve_most: it saves none for the door). */
#define DOORS2(i)                                                                                 \
  DOOR void __profcc_door_m2_##i(const void *a, const void *b, uint64_t x) {                      \
    const void *q[] = {a, b};                                                                     \
    door_member(q[i], x, i, 2);                                                                   \
  }
#define DOORS3(i)                                                                                 \
  DOOR void __profcc_door_m3_##i(const void *a, const void *b, const void *c, uint64_t x) {       \
    const void *q[] = {a, b, c};                                                                  \
    door_member(q[i], x, i, 3);                                                                   \
  }
#define DOORS4(i)                                                                                 \
  DOOR void __profcc_door_m4_##i(const void *a, const void *b, const void *c, const void *d,      \
                                 uint64_t x) {                                                    \
    const void *q[] = {a, b, c, d};                                                               \
    door_member(q[i], x, i, 4);                                                                   \
  }
DOORS2(0)
DOORS2(1)
DOORS3(0)
DOORS3(1)
DOORS3(2)
DOORS4(0)
DOORS4(1)
DOORS4(2)
DOORS4(3)
/* Member i's check; S: the index of the member that is the group's sampling write (-1:
 * none). */
#define MEMBER(i, k, S, door, ...)                                                                \
  do {                                                                                            \
    uint64_t f = field(x, i);                                                                     \
    int due = (f & 1) ? (i == S ? write_s_due(q[i], first_site(x) - leader_distance(x, k))     \
                                : write_due(q[i]))                                             \
                      : read_due(q[i]);                                                        \
    if (__builtin_expect(due, 0))                                                                 \
      door(__VA_ARGS__);                                                                          \
  } while (0)
#define M2(name, S)                                                                  \
  CHECKER void name(const void *a, const void *b, uint64_t x) {                                   \
    const void *q[] = {a, b};                                                                     \
    MEMBER(0, 2, S, __profcc_door_m2_0, a, b, x);                                                 \
    MEMBER(1, 2, S, __profcc_door_m2_1, a, b, x);                                                 \
  }
#define M3(name, S)                                                                  \
  CHECKER void name(const void *a, const void *b, const void *c, uint64_t x) {                    \
    const void *q[] = {a, b, c};                                                                  \
    MEMBER(0, 3, S, __profcc_door_m3_0, a, b, c, x);                                              \
    MEMBER(1, 3, S, __profcc_door_m3_1, a, b, c, x);                                              \
    MEMBER(2, 3, S, __profcc_door_m3_2, a, b, c, x);                                              \
  }
#define M4(name, S)                                                                  \
  CHECKER void name(const void *a, const void *b, const void *c, const void *d, uint64_t x) {     \
    const void *q[] = {a, b, c, d};                                                               \
    MEMBER(0, 4, S, __profcc_door_m4_0, a, b, c, d, x);                                           \
    MEMBER(1, 4, S, __profcc_door_m4_1, a, b, c, d, x);                                           \
    MEMBER(2, 4, S, __profcc_door_m4_2, a, b, c, d, x);                                           \
    MEMBER(3, 4, S, __profcc_door_m4_3, a, b, c, d, x);                                           \
  }
/* abi::names::CHECK_MERGED: _s<j>: member j is the group's sampling write. */
M2(__profcc_check_m2, -1)
M2(__profcc_check_m2_s0, 0)
M2(__profcc_check_m2_s1, 1)
M3(__profcc_check_m3, -1)
M3(__profcc_check_m3_s0, 0)
M3(__profcc_check_m3_s1, 1)
M3(__profcc_check_m3_s2, 2)
M4(__profcc_check_m4, -1)
M4(__profcc_check_m4_s0, 0)
M4(__profcc_check_m4_s1, 1)
M4(__profcc_check_m4_s2, 2)
M4(__profcc_check_m4_s3, 3)

/* The inlined hooks (accesses in loops): one load of the shadow word, one compare; the cold
 * side is one call of the access's checker, which decides again. `site`: a read's own
 * site; `leader`: the site whose counter a write shares (the write's own is `info >>
 * PROFCC_INFO_SITE_SHIFT` sites further).
 *
 * On a tracked line every access fails the compare, and one in fs_sample per thread goes on:
 * the cold side of a group's sampling write counts that down itself and calls the checker
 * only for the access that goes on, with the countdown at 1 for the checker to take it (as
 * when straight-line code calls it). A loop that keeps writing a falsely shared line (an
 * OpenMP partial sum) then pays a decrement per such write, not a call (fs_omp_partial with
 * sharing: 0.74 s -> 0.64 s, paired runs). The same in every write made fs_omp_partial 0.63 s
 * -> 0.35 s but kmeans_loop 15 % slower (its loop's other writes), and in reads too made
 * sqlite3.o's text 2.53x clang's (2.32x without): both left out. */
static inline __attribute__((always_inline)) int hot_skip(uint64_t w) {
  if ((int64_t)w >= 0)
    return 0;
#if defined(__x86_64__)
  /* The countdown's address is found here, on the cold side: as a plain TLS access the
   * compiler hoists it out of the loop into a register the hot path then lacks (kmeans_loop
   * ran 15 % slower with sharing). */
  uint64_t off;
  unsigned char more;
  __asm__ volatile("movq __profcc_hot_cd@gottpoff(%%rip), %1\n\t"
                   "subq $1, %%fs:(%1)\n\t"
                   "setnz %0"
                   : "=q"(more), "=&r"(off)
                   :
                   : "cc", "memory");
  if (more)
    return 1;
  __asm__ volatile("movq $1, %%fs:(%0)" : : "r"(off) : "memory");
  return 0;
#else
  if (--__profcc_hot_cd != 0)
    return 1;
  __profcc_hot_cd = 1;
  return 0;
#endif
}

/* A loop's inlined check reads the shadow at every access, one thread or many, and passes
 * without a call once the line has this thread as owner (a write) or reader (a read). While
 * one thread runs, its cold side gives the line that state itself instead of calling the
 * checker (which would return at once): the loop's next accesses to the line pass. Taking the
 * cold side at every access made kmeans_loop 1.6x slower. A tracked line (the sign bit) keeps
 * its state; a cold or retired one keeps its counters and record (outside WRITE_MASK). The
 * word's address is found in the asm on x86-64: as a plain load it is loop-invariant, and
 * the compiler would keep it in a register the fast path then lacks (as for the countdown). */
static inline __attribute__((always_inline)) int sharing_on_cold(void) {
#if defined(__x86_64__)
  uint64_t alone;
  __asm__ volatile("movq __profcc_alone@GOTPCREL(%%rip), %0\n\t"
                   "movq (%0), %0"
                   : "=r"(alone)
                   :
                   : "memory");
  return alone == 0;
#else
  return sharing_on();
#endif
}
static inline __attribute__((always_inline)) void alone_read(const void *p, uint64_t w,
                                                             uint64_t rb) {
  if ((int64_t)w >= 0)
    *shadow_of(p) = w | rb;
}
static inline __attribute__((always_inline)) void alone_write(const void *p, uint64_t w,
                                                              uint64_t me) {
  if ((int64_t)w >= 0)
    *shadow_of(p) = (w & ~PROFCC_WRITE_MASK) | me;
}

void __profcc_read(uint64_t site, const void *p, uint64_t info, uint64_t rb) {
  uint64_t w = *shadow_of(p);
  /* (w & (HOT | rb)) != rb as two tests: no register for HOT | rb in the loop. */
  if (__builtin_expect(!(w & rb) | ((int64_t)w < 0), 0)) {
    if (sharing_on_cold())
      __profcc_check_read(p, site, info);
    else
      alone_read(p, w, rb);
  }
}

void __profcc_write(uint64_t leader, const void *p, uint64_t info, uint64_t me) {
  uint64_t w = *shadow_of(p);
  if (__builtin_expect((w & PROFCC_WRITE_MASK) != me, 0)) {
    if (sharing_on_cold())
      __profcc_check_write(p, leader, info);
    else
      alone_write(p, w, me);
  }
}

/* The group's sampling write: `n` is the group's count (what __profcc_count returned). A
 * sample goes on whatever the countdown says. */
void __profcc_write_s(uint64_t leader, uint64_t n, const void *p, uint64_t info,
                      uint64_t me, uint64_t wmask) {
  uint64_t w = *shadow_of(p);
  int sample = (n & wmask) == 0;
  if (__builtin_expect(((w & PROFCC_WRITE_MASK) != me) | sample, 0)) {
    if (!sharing_on_cold())
      alone_write(p, w, me);
    else if (sample || !hot_skip(w))
      __profcc_check_write_s(p, leader, info);
  }
}

/* The same with the checker of a read that stands for itself alone (its size its info) or of
 * a plain packed write (abi: packed_write_site) on the cold side: the pass passes it, and
 * once inlined the call is direct and has no info argument. */
typedef __attribute__((preserve_most)) void (*checker_k)(const void *p, uint64_t x);
void __profcc_read_k(uint64_t site, const void *p, uint64_t rb, checker_k check) {
  uint64_t w = *shadow_of(p);
  if (__builtin_expect(!(w & rb) | ((int64_t)w < 0), 0)) {
    if (sharing_on_cold())
      check(p, site);
    else
      alone_read(p, w, rb);
  }
}

void __profcc_write_k(uint64_t x, const void *p, uint64_t me, checker_k check) {
  uint64_t w = *shadow_of(p);
  if (__builtin_expect((w & PROFCC_WRITE_MASK) != me, 0)) {
    if (sharing_on_cold())
      check(p, x);
    else
      alone_write(p, w, me);
  }
}

void __profcc_write_s_k(uint64_t x, uint64_t n, const void *p, uint64_t me, uint64_t wmask,
                        checker_k check) {
  uint64_t w = *shadow_of(p);
  int sample = (n & wmask) == 0;
  if (__builtin_expect(((w & PROFCC_WRITE_MASK) != me) | sample, 0)) {
    if (!sharing_on_cold())
      alone_write(p, w, me);
    else if (sample || !hot_skip(w))
      check(p, x);
  }
}

/* The gates: a straight-line access's checker called only while more than one thread runs
 * (`alone`, __profcc_alone as the pass loaded it: once per stretch of a block with no call
 * between, since only a call of this thread's can start a second thread); the pass counts
 * the group in place instead of in the checker, so a lone thread pays an increment and a
 * branch per access, not a call. Inlined with the checker a constant argument: the call is
 * direct. */
typedef __attribute__((preserve_most)) void (*checker_3)(const void *p, uint64_t site, uint64_t info);
typedef __attribute__((preserve_most)) void (*checker_m2)(const void *, const void *, uint64_t);
typedef __attribute__((preserve_most)) void (*checker_m3)(const void *, const void *, const void *,
                                                          uint64_t);
typedef __attribute__((preserve_most)) void (*checker_m4)(const void *, const void *, const void *,
                                                          const void *, uint64_t);
void __profcc_gate_k(const void *p, uint64_t x, checker_k check, uint64_t alone) {
  if (alone == 0)
    check(p, x);
}
void __profcc_gate(const void *p, uint64_t site, uint64_t info, checker_3 check, uint64_t alone) {
  if (alone == 0)
    check(p, site, info);
}
void __profcc_gate_m2(const void *a, const void *b, uint64_t x, checker_m2 check, uint64_t alone) {
  if (alone == 0)
    check(a, b, x);
}
void __profcc_gate_m3(const void *a, const void *b, const void *c, uint64_t x, checker_m3 check,
                      uint64_t alone) {
  if (alone == 0)
    check(a, b, c, x);
}
void __profcc_gate_m4(const void *a, const void *b, const void *c, const void *d, uint64_t x,
                      checker_m4 check, uint64_t alone) {
  if (alone == 0)
    check(a, b, c, d, x);
}

/* A fixed-size access longer than a line, or of run-time length (memory intrinsics): every
 * line it covers goes through the runtime. */
void __profcc_range(uint64_t *c, uint64_t leader, const void *p, uint64_t len, uint64_t info) {
  if (len && sharing_on())
    __profcc_range_slow(p, len, info, c + PROFCC_COUNTER_STRIDE * leader);
}
void __profcc_range_n(uint64_t *c, uint64_t local, const void *p, uint64_t len, uint64_t info) {
  c[PROFCC_COUNTER_STRIDE * local + PROFCC_COUNT_SLOT] += 1;
  c[PROFCC_COUNTER_STRIDE * local + PROFCC_BYTES_SLOT] += len;
  if (len && sharing_on())
    __profcc_range_slow(p, len, info, c + PROFCC_COUNTER_STRIDE * local);
}
