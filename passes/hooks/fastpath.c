/* The access hooks' bodies. Compiled to bitcode when profcc is built, linked into every
 * instrumented module, marked alwaysinline and inlined by the always-inline pass.
 *
 * Counting mode is branch-free: every thread's `__profcc_counts` points at valid counters
 * from its first instruction (a static scratch array until the runtime gives the thread its
 * own, which happens before any user code runs on it), so an access costs one increment of
 * a counter in the thread's own array, and the function prologue one TLS load.
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines. */
#include <stdint.h>

/* Defined by the runtime (rt/csrc/tls.c); the executable's static TLS block. */
extern __thread uint64_t *__profcc_counts __attribute__((tls_model("initial-exec")));

/* Once per function: the thread's counters for this module (base = module's first site). */
uint64_t *__profcc_fn_counters(uint32_t base) { return __profcc_counts + 2 * (uint64_t)base; }

/* A fixed-size access: bytes are count x size, derived when the profile is written. */
void __profcc_count(uint64_t *c, uint64_t local) { c[2 * local] += 1; }

/* An access of run-time length (memory intrinsics). */
void __profcc_count_n(uint64_t *c, uint64_t local, uint64_t size) {
  c[2 * local] += 1;
  c[2 * local + 1] += size;
}
