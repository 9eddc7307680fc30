/* The access hook's fast path. Compiled to bitcode when profcc is built, linked into every
 * instrumented module, marked alwaysinline and inlined by the always-inline pass, so user
 * code never pays for a call on the common path. The rare case (first access of a thread)
 * leaves through the one out-of-line door, __profcc_slow_access, in the runtime.
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines. */
#include <stdint.h>

/* Defined by the runtime (rt/csrc/tls.c); the executable's static TLS block. */
extern __thread uint64_t *__profcc_counts __attribute__((tls_model("initial-exec")));

void __profcc_slow_access(uintptr_t addr, uint32_t gsite, uint64_t size);

void __profcc_access(uintptr_t addr, uint32_t gsite, uint64_t size) {
  uint64_t *c = __profcc_counts;
  if (__builtin_expect(c == 0, 0)) {
    __profcc_slow_access(addr, gsite, size);
    return;
  }
  c[2 * (uint64_t)gsite] += 1;
  c[2 * (uint64_t)gsite + 1] += size;
}
