/* The access hooks' bodies. Compiled to bitcode when profcc is built, linked into every
 * instrumented module, marked alwaysinline and inlined by the always-inline pass.
 *
 * Counting is branch-free: every thread's `__profcc_counts` points at valid counters from its
 * first instruction (a static scratch array until the runtime gives the thread its own, which
 * happens before any user code runs on it), so an access costs one increment of a counter in
 * the thread's own array, and the function prologue one TLS load.
 *
 * Sharing (cache-line) analysis adds one load of the line's shadow word and one compare per
 * checked access; only an ownership change, a first read by a thread, a tracked ("hot") line's
 * sampled access or a write-volume sample leaves through the cold door `__profcc_slow`
 * (rt/src/sharing.rs documents the shadow word and the address map). The pass shares one
 * counter among the accesses of a basic block and drops checks an earlier or later access to
 * the same address covers (passes/src/select.rs, `plan`).
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines. */
#include <stdint.h>

/* Must match rt/src/sharing.rs. */
#define PROFCC_LINE_SHADOW 0x100000000000ull /* 16 TiB: 8 bytes per 64-byte line */
#define PROFCC_HOT (1ull << 63)
#define PROFCC_OWNER_BITS 0x8000ffffffffffffull /* hot, reader mask, owner */

/* Defined by the runtime (rt/csrc/tls.c); the executable's static TLS block. */
extern __thread uint64_t *__profcc_counts __attribute__((tls_model("initial-exec")));
/* The thread's owner word (id+1 | its reader bit), its reader bit, write-sample mask. */
extern __thread uint64_t __profcc_me __attribute__((tls_model("initial-exec")));
extern __thread uint64_t __profcc_rb __attribute__((tls_model("initial-exec")));
extern __thread uint64_t __profcc_wmask __attribute__((tls_model("initial-exec")));
/* Countdown to the thread's next sampled access to a tracked line (the runtime re-arms it). */
extern __thread uint64_t __profcc_hot_cd __attribute__((tls_model("initial-exec")));

/* The cold door (rt/csrc/tls.c, then rt/src/sharing.rs). slot: the group's counter in the
 * thread's array (gives the site with info >> 32 and, for writes, the volume sample); info:
 * size (bits 0-7) | write << 8 | atomic << 10 | read-modify-write << 11 | (site - leader) << 32.
 * Kept to three arguments and one call: the code after each access stays small. */
__attribute__((cold, preserve_most)) void __profcc_slow(const void *p, uint64_t *slot, uint64_t info);
__attribute__((cold)) void __profcc_range_slow(const void *p, uint64_t len, uint64_t info,
                                               uint64_t *slot);

static inline uint64_t *shadow_of(const void *p) {
  return (uint64_t *)(PROFCC_LINE_SHADOW + (((uint64_t)p >> 6) << 3));
}

/* Once per function: the thread's counters for this module (base = module's first site). */
uint64_t *__profcc_fn_counters(uint32_t base) { return __profcc_counts + 2 * (uint64_t)base; }
/* Once per function, when it has instrumented reads / writes. */
uint64_t __profcc_fn_me(void) { return __profcc_me; }
uint64_t __profcc_fn_rb(void) { return __profcc_rb; }
uint64_t __profcc_fn_wmask(void) { return __profcc_wmask; }

/* One execution of a group of accesses (a basic block's run between calls): the group's
 * first site counts for all of them; returns the new count (the write-volume sample reads
 * it). A fixed-size access: bytes are count x size, derived when the profile is written. */
uint64_t __profcc_count(uint64_t *c, uint64_t local) { return c[2 * local] += 1; }

/* An access of run-time length (memory intrinsics): counts and bytes of its own. */
void __profcc_count_n(uint64_t *c, uint64_t local, uint64_t size) {
  c[2 * local] += 1;
  c[2 * local + 1] += size;
}

/* A read: leave unless the line is hot or this thread has not read it since its last write.
 * On a hot line, one access in fs_sample per thread goes on (the countdown reaches zero).
 * `leader`: the site whose counter the access shares; the site itself is in info >> 32. */
void __profcc_read(uint64_t *c, uint64_t leader, const void *p, uint64_t info, uint64_t rb) {
  uint64_t w = *shadow_of(p);
  if (__builtin_expect((w & (PROFCC_HOT | rb)) != rb, 0)) {
    if (!(w & PROFCC_HOT) || --__profcc_hot_cd == 0)
      __profcc_slow(p, c + 2 * leader, info);
  }
}

/* A write: leave when this thread is the line's last writer and nobody read it since (the
 * shadow word equals the thread's owner word, counters masked out), unless the group's count
 * `n` hits the thread's write-volume sample. Nothing is stored to the shadow here. */
void __profcc_write(uint64_t *c, uint64_t leader, uint64_t n, const void *p, uint64_t info,
                    uint64_t me, uint64_t wmask) {
  uint64_t w = *shadow_of(p);
  int sample = (n & wmask) == 0;
  if (__builtin_expect(((w & PROFCC_OWNER_BITS) != me) | sample, 0)) {
    if (sample || !(w & PROFCC_HOT) || --__profcc_hot_cd == 0)
      __profcc_slow(p, c + 2 * leader, info);
  }
}

/* A fixed-size access longer than a line, or of run-time length (memory intrinsics): every
 * line it covers goes through the runtime. */
void __profcc_range(uint64_t *c, uint64_t leader, const void *p, uint64_t len, uint64_t info) {
  if (len)
    __profcc_range_slow(p, len, info, c + 2 * leader);
}
void __profcc_range_n(uint64_t *c, uint64_t local, const void *p, uint64_t len, uint64_t info) {
  c[2 * local] += 1;
  c[2 * local + 1] += len;
  if (len)
    __profcc_range_slow(p, len, info, c + 2 * local);
}
