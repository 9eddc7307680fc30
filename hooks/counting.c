/* Access counting: hook bodies compiled to bitcode when profcc is built (passes/build.rs),
 * linked into every instrumented module, marked alwaysinline and inlined by the always-inline
 * pass. The runtime side is rt/src/counts.rs (registration, per-thread arrays, merge) and
 * rt/csrc/tls.c (the thread's array pointer and its scratch array).
 *
 * Counting is branch-free: every thread's `__profcc_counts` points at valid counters from its
 * first instruction (a static scratch array until the runtime gives the thread its own, which
 * happens before any user code runs on it), so an access costs one increment of a counter in
 * the thread's own array, and the function prologue one TLS load. The pass shares one counter
 * among the accesses of a basic block (passes/src/select.rs, `plan`).
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines. */
#include "profcc_hooks.h"

/* Once per function: the thread's counters for this module (base = module's first site).
 * The empty asm makes the sum one opaque value: without it the code generator folds the
 * thread's array and the module's offset into every increment's address separately and keeps
 * both alive (two registers across the function, one of them spilled in kmeans_loop). */
uint64_t *__profcc_fn_counters(uint32_t base) {
  uint64_t *c = __profcc_counts + PROFCC_COUNTER_STRIDE * (uint64_t)base;
  __asm__("" : "+r"(c));
  return c;
}

/* One execution of a group of accesses (a basic block's run between calls): the group's
 * first site counts for all of them; returns the new count (the write-volume sample reads
 * it). A fixed-size access: bytes are count x size, derived when the profile is written.
 * The pass builds this body in place (passes/src/rewrite.rs) rather than calling it, and in
 * a counting-only single-block loop keeps the count in a register (added on the exit edge). */
uint64_t __profcc_count(uint64_t *c, uint64_t local) {
  return c[PROFCC_COUNTER_STRIDE * local + PROFCC_COUNT_SLOT] += 1;
}

/* An access of run-time length (memory intrinsics): counts and bytes of its own. */
void __profcc_count_n(uint64_t *c, uint64_t local, uint64_t size) {
  c[PROFCC_COUNTER_STRIDE * local + PROFCC_COUNT_SLOT] += 1;
  c[PROFCC_COUNTER_STRIDE * local + PROFCC_BYTES_SLOT] += size;
}
