/* NUMA analysis (docs/numa.md): the page check of one access, compiled to bitcode with
 * counting.c and sharing.c (passes/build.rs) and inlined before each access of a module built
 * with PROFCC_INSTRUMENT=numa. Its door is `__profcc_first_touch` (rt/src/analyses/numa.rs).
 *
 * One load of the page's shadow entry (0: untouched, else its home) and one increment of the
 * thread's row of the thread x home matrix; an untouched page goes through the door first,
 * which makes this thread its first toucher (or returns the home another thread gave it).
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines (the row is
 * the thread's own). */
#include "profcc_hooks.h"

_Static_assert((1 << PROFCC_PAGE_ENTRY_SHIFT) == sizeof(uint32_t), "one u32 per page");

void __profcc_numa(const void *p) {
  uint32_t e = *(const uint32_t *)(PROFCC_PAGE_SHADOW +
                                   (((uint64_t)p >> PROFCC_PAGE_SHIFT) << PROFCC_PAGE_ENTRY_SHIFT));
  if (__builtin_expect(e == 0, 0))
    e = __profcc_first_touch(p);
  __profcc_numa_row[e] += 1;
}
