/* Memory policies for the NUMA analysis (rt/src/analyses/numa.rs): the program's calls of
 * mbind, set_mempolicy, move_pages and of libnuma's allocators, wrapped by the link
 * (`-Wl,--wrap=NAME` for each name of the driver's NUMA_WRAPPED, added only to links that name
 * libnuma). Each wrapper calls the real function, then tells the runtime what it did; results
 * are the real ones.
 *
 * Wrapped, not interposed: a definition of `mbind` in the runtime would let a program that
 * calls it link without libnuma, where clang-22 fails (autoconf's AC_SEARCH_LIBS would find
 * "none required"). `--wrap` redirects only the program's own references, and only in links
 * with libnuma; the real functions are weak references, null in every other link, where
 * nothing calls the wrappers.
 *
 * libnuma's allocators map their memory inside libnuma (no frame pointers there, so the
 * mapping's stack would not reach the program) and set its policy with libnuma's own mbind,
 * which no wrapper sees: the real call runs unrecorded, then its mapping is recorded here with
 * the program's stack, and its policy too. */
#include <stddef.h>
#include <unistd.h>

struct bitmask { unsigned long size; unsigned long *maskp; }; /* libnuma's, <numa.h> */

void profcc_numa_mbind(const void *addr, unsigned long len, int mode, const unsigned long *mask,
                       unsigned long maxnode);
void profcc_numa_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode);
void profcc_numa_move_pages(unsigned long count, void **pages, const int *nodes,
                            const int *status, long result);
/* rt/csrc/interpose.c: run a call unrecorded; record a mapping with the caller's stack. */
int profcc_quiet_enter(void);
void profcc_quiet_leave(int was);
void profcc_record_mapping(void *p, size_t len, void *fp);

enum { MPOL_BIND = 2, MPOL_INTERLEAVE = 3 };
/* Every node: the runtime reads a mask holding all of the machine's nodes as "all". */
static const unsigned long all_nodes = ~0UL;

#define WEAK __attribute__((weak))
long __real_mbind(void *, unsigned long, int, const unsigned long *, unsigned long, unsigned) WEAK;
long __real_set_mempolicy(int, const unsigned long *, unsigned long) WEAK;
long __real_move_pages(int, unsigned long, void **, const int *, int *, int) WEAK;
void *__real_numa_alloc_interleaved(size_t) WEAK;
void *__real_numa_alloc_interleaved_subset(size_t, struct bitmask *) WEAK;
void *__real_numa_alloc_onnode(size_t, int) WEAK;
void *__real_numa_alloc_local(size_t) WEAK;
void *__real_numa_alloc(size_t) WEAK;
void __real_numa_interleave_memory(void *, size_t, struct bitmask *) WEAK;
void __real_numa_tonode_memory(void *, size_t, int) WEAK;

long __wrap_mbind(void *addr, unsigned long len, int mode, const unsigned long *mask,
                  unsigned long maxnode, unsigned flags) {
  long r = __real_mbind(addr, len, mode, mask, maxnode, flags);
  profcc_numa_mbind(addr, len, mode, mask, maxnode);
  return r;
}

long __wrap_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode) {
  long r = __real_set_mempolicy(mode, mask, maxnode);
  profcc_numa_set_mempolicy(mode, mask, maxnode);
  return r;
}

long __wrap_move_pages(int pid, unsigned long count, void **pages, const int *nodes, int *status,
                       int flags) {
  long r = __real_move_pages(pid, count, pages, nodes, status, flags);
  if (pid == 0 || pid == getpid())
    profcc_numa_move_pages(count, pages, nodes, status, r);
  return r;
}

#define FP() __builtin_frame_address(0)
/* The real allocator's call, unrecorded, then its mapping with the program's stack. */
#define ALLOC(call, n)                                                                          \
  ({                                                                                            \
    int was_ = profcc_quiet_enter();                                                            \
    void *p_ = call;                                                                            \
    profcc_quiet_leave(was_);                                                                   \
    if (p_) profcc_record_mapping(p_, n, FP());                                                 \
    p_;                                                                                         \
  })

__attribute__((noinline)) void *__wrap_numa_alloc_interleaved(size_t n) {
  void *p = ALLOC(__real_numa_alloc_interleaved(n), n);
  if (p) profcc_numa_mbind(p, n, MPOL_INTERLEAVE, &all_nodes, 64);
  return p;
}

__attribute__((noinline)) void *__wrap_numa_alloc_interleaved_subset(size_t n, struct bitmask *m) {
  void *p = ALLOC(__real_numa_alloc_interleaved_subset(n, m), n);
  if (p && m) profcc_numa_mbind(p, n, MPOL_INTERLEAVE, m->maskp, m->size);
  return p;
}

__attribute__((noinline)) void *__wrap_numa_alloc_onnode(size_t n, int node) {
  void *p = ALLOC(__real_numa_alloc_onnode(n, node), n);
  if (p && node >= 0 && node < 64) {
    unsigned long mask = 1UL << node;
    profcc_numa_mbind(p, n, MPOL_BIND, &mask, 64);
  }
  return p;
}

__attribute__((noinline)) void *__wrap_numa_alloc_local(size_t n) {
  return ALLOC(__real_numa_alloc_local(n), n);
}

__attribute__((noinline)) void *__wrap_numa_alloc(size_t n) {
  return ALLOC(__real_numa_alloc(n), n);
}

void __wrap_numa_interleave_memory(void *p, size_t n, struct bitmask *m) {
  __real_numa_interleave_memory(p, n, m);
  if (m) profcc_numa_mbind(p, n, MPOL_INTERLEAVE, m->maskp, m->size);
}

void __wrap_numa_tonode_memory(void *p, size_t n, int node) {
  __real_numa_tonode_memory(p, n, node);
  if (node >= 0 && node < 64) {
    unsigned long mask = 1UL << node;
    profcc_numa_mbind(p, n, MPOL_BIND, &mask, 64);
  }
}

/* OpenMP's barrier (`-Wl,--wrap=__kmpc_barrier` in links that use OpenMP, the driver's
 * OMP_WRAPPED): every call is counted as a barrier wait of the calling thread (the last to
 * arrive waits too, for nothing: libomp does not say who it was). */
void __real___kmpc_barrier(void *loc, int gtid) WEAK;
void profcc_wait_seen(int kind); /* rt/src/analyses/numa/waits.h (in interpose.c) */
enum { WAIT_BARRIER = 3 };
void __wrap___kmpc_barrier(void *loc, int gtid) {
  __real___kmpc_barrier(loc, gtid);
  profcc_wait_seen(WAIT_BARRIER);
}

/* OpenMP's critical sections and locks, counted as mutex waits when contended (the same
 * links). A lock is tried first (`omp_test_lock`), as the pthread interposers do. A critical
 * section cannot be tried: each section (its `kmp_critical_name`, one per name) has a count of
 * the threads inside or waiting, kept here around the real calls, and a thread that finds it
 * above zero waits. Sections beyond CRIT_CELLS (distinct names in one program) are not
 * counted. */
enum { WAIT_MUTEX = 0 };
#define CRIT_CELLS 256
static struct {
  void *name; /* atomic: __atomic builtins only */
  int inside;
} crit[CRIT_CELLS];

static int *crit_count(void *name) {
  size_t h = ((size_t)name >> 5) * 0x9e3779b97f4a7c15ull >> 56;
  for (size_t k = 0; k < CRIT_CELLS; k++) {
    size_t i = (h + k) % CRIT_CELLS;
    void *seen = __atomic_load_n(&crit[i].name, __ATOMIC_RELAXED);
    if (seen == NULL) {
      if (__atomic_compare_exchange_n(&crit[i].name, &seen, name, 0, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED))
        return &crit[i].inside;
    }
    if (seen == name) return &crit[i].inside;
  }
  return NULL;
}

static void crit_enter(void *name) {
  int *c = crit_count(name);
  if (c && __atomic_fetch_add(c, 1, __ATOMIC_RELAXED) > 0) profcc_wait_seen(WAIT_MUTEX);
}

static void crit_leave(void *name) {
  int *c = crit_count(name);
  if (c) __atomic_fetch_sub(c, 1, __ATOMIC_RELAXED);
}

void __real___kmpc_critical(void *loc, int gtid, void *name) WEAK;
void __real___kmpc_critical_with_hint(void *loc, int gtid, void *name, unsigned hint) WEAK;
void __real___kmpc_end_critical(void *loc, int gtid, void *name) WEAK;
void __wrap___kmpc_critical(void *loc, int gtid, void *name) {
  crit_enter(name);
  __real___kmpc_critical(loc, gtid, name);
}
void __wrap___kmpc_critical_with_hint(void *loc, int gtid, void *name, unsigned hint) {
  crit_enter(name);
  __real___kmpc_critical_with_hint(loc, gtid, name, hint);
}
void __wrap___kmpc_end_critical(void *loc, int gtid, void *name) {
  __real___kmpc_end_critical(loc, gtid, name);
  crit_leave(name);
}

/* omp_lock_t and omp_nest_lock_t are a pointer's size in libomp's API (<omp.h>). */
int omp_test_lock(void *lock) WEAK;
int omp_test_nest_lock(void *lock) WEAK;
void __real_omp_set_lock(void *lock) WEAK;
void __real_omp_set_nest_lock(void *lock) WEAK;
void __wrap_omp_set_lock(void *lock) {
  if (omp_test_lock(lock)) return;
  profcc_wait_seen(WAIT_MUTEX);
  __real_omp_set_lock(lock);
}
void __wrap_omp_set_nest_lock(void *lock) {
  if (omp_test_nest_lock(lock)) return;
  profcc_wait_seen(WAIT_MUTEX);
  __real_omp_set_nest_lock(lock);
}
