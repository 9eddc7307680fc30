/* NUMA analysis (docs/numa.md): the page count of one access, compiled to bitcode with
 * counting.c and sharing.c (passes/build.rs) and inlined before each access of a module built
 * with PROFCC_INSTRUMENT=numa. Its door is `__profcc_page_miss` (rt/src/analyses/numa.rs).
 *
 * One compare of the access's page with its slot in the thread's page cache and one
 * increment of the slot's count. A page not in its slot goes through the door first, which
 * adds the slot's count to the page it held (its record in the page shadow and the thread's
 * row of the thread x home matrix), gives the page a home at its first touch, and hands the
 * slot to this page. Sequential sweeps and small working sets stay in the cache; the page
 * shadow is never read here.
 *
 * Hot path rules: no locks, no allocation, no libc, no stores to shared lines (the cache is
 * the thread's own). */
#include "profcc_hooks.h"

_Static_assert(PROFCC_NUMA_SLOTS == 1u << PROFCC_NUMA_SLOT_BITS, "slots: a power of two");

static inline __attribute__((always_inline)) void count(const void *p, uint64_t n) {
  uint64_t page = (uint64_t)p >> PROFCC_PAGE_SHIFT;
  struct profcc_page_slot *s = &__profcc_numa_cache[PROFCC_NUMA_SLOT_OF(page)];
  if (__builtin_expect(s->page != page, 0))
    __profcc_page_miss(p);
  s->count += n;
}

void __profcc_numa(const void *p) { count(p, 1); }

/* An access and the n - 1 later accesses to the same address it covers (same epoch: no call,
 * atomic or fence between them; passes/src/select.rs): one page, counted at once. */
void __profcc_numa_n(const void *p, uint64_t n) { count(p, n); }
