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

/* The same out of line, for accesses outside short loops (the pass links them like the
 * sharing checkers: internal, never inlined): a call of a few bytes at each access instead
 * of the inlined compare, increment and door call, which made sqlite3.o's text 7x clang's and
 * its compile 2.8x. preserve_most: the caller keeps its registers; the door it may call keeps
 * them too and gets the access's address (the checker's return address) for the first-touch
 * place and the site. */
#define NUMA_CHECKER __attribute__((preserve_most, noinline))
static inline __attribute__((always_inline)) void count_at(const void *p, uint64_t n,
                                                           const void *pc) {
  uint64_t page = (uint64_t)p >> PROFCC_PAGE_SHIFT;
  struct profcc_page_slot *s = &__profcc_numa_cache[PROFCC_NUMA_SLOT_OF(page)];
  if (__builtin_expect(s->page != page, 0))
    __profcc_page_miss_at(p, pc);
  s->count += n;
}
NUMA_CHECKER void __profcc_numa_check(const void *p) {
  count_at(p, 1, __builtin_return_address(0));
}
/* n is 0 at a loop's exit reached from elsewhere, where the pass counts a loop-invariant
 * address's iterations (passes/src/rewrite.rs, numa_check_at_exit): the address may not have
 * been accessed at all, so its page is neither counted nor touched. */
NUMA_CHECKER void __profcc_numa_check_n(const void *p, uint64_t n) {
  if (__builtin_expect(n == 0, 0))
    return;
  count_at(p, n, __builtin_return_address(0));
}
