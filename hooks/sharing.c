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

static inline uint64_t *shadow_of(const void *p) { return (uint64_t *)PROFCC_LINE_SHADOW_OF(p); }

/* Once per function, when it has instrumented reads / writes. */
uint64_t __profcc_fn_me(void) { return __profcc_me; }
uint64_t __profcc_fn_rb(void) { return __profcc_rb; }
uint64_t __profcc_fn_wmask(void) { return __profcc_wmask; }

/* A read: leave unless the line is hot or this thread has not read it since its last write.
 * On a hot line, one access in fs_sample per thread goes on (the countdown reaches zero).
 * `leader`: the site whose counter the access shares; the site itself is in info >> 32. */
void __profcc_read(uint64_t *c, uint64_t leader, const void *p, uint64_t info, uint64_t rb) {
  uint64_t w = *shadow_of(p);
  if (__builtin_expect((w & (PROFCC_HOT | rb)) != rb, 0)) {
    if (!(w & PROFCC_HOT) || --__profcc_hot_cd == 0)
      __profcc_slow(p, c + PROFCC_COUNTER_STRIDE * leader, info);
  }
}

/* A write: leave when this thread is the line's last writer and nobody read it since (the
 * shadow word equals the thread's owner word, counters masked out), unless the group's count
 * `n` hits the thread's write-volume sample. Nothing is stored to the shadow here. */
void __profcc_write(uint64_t *c, uint64_t leader, uint64_t n, const void *p, uint64_t info,
                    uint64_t me, uint64_t wmask) {
  uint64_t w = *shadow_of(p);
  int sample = (n & wmask) == 0;
  if (__builtin_expect(((w & PROFCC_WRITE_MASK) != me) | sample, 0)) {
    if (sample || !(w & PROFCC_HOT) || --__profcc_hot_cd == 0)
      __profcc_slow(p, c + PROFCC_COUNTER_STRIDE * leader, info);
  }
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
