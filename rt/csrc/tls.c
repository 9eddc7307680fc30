/* The thread-local word the inlined fast path reads. Defined in C because stable Rust
 * cannot give a thread-local a fixed symbol name, an initial-exec model and an initialiser
 * that is the address of another object. */
#include "profcc_hooks.h" /* hooks/: declarations of the words below; the ABI constants */

/* Where a thread counts until the runtime gives it its own array (done before any user code
 * runs on a thread it created, and in the first constructor for the main thread). Only
 * threads started behind the runtime's back (raw clone) keep counting here; the profile
 * reports them as one pseudo-thread. Zero-fill BSS: costs address space, not memory. */
__attribute__((visibility("hidden"))) uint64_t profcc_scratch_counts[PROFCC_SLOTS];

/* Per-thread counter array: PROFCC_COUNTER_STRIDE slots per site (executions, bytes of
 * run-time-length accesses). Never null, so the fast path needs no branch. */
__attribute__((tls_model("initial-exec"), visibility("default")))
__thread uint64_t *__profcc_counts = profcc_scratch_counts;

uint64_t **profcc_counts_slot(void) { return &__profcc_counts; }
uint64_t *profcc_scratch(void) { return profcc_scratch_counts; }

/* Sharing analysis, per thread (rt/src/analyses/sharing.rs sets them when the thread starts):
 * the owner word a write compares the line's shadow word with (id+1 | own reader bit), the
 * reader bit a read checks, and the write-volume sample mask (all ones = never sample).
 * Zero owner word: a thread the runtime has not seen; its accesses are not analysed. */
__attribute__((tls_model("initial-exec"), visibility("default"))) __thread uint64_t __profcc_me;
__attribute__((tls_model("initial-exec"), visibility("default"))) __thread uint64_t __profcc_rb;
__attribute__((tls_model("initial-exec"), visibility("default")))
__thread uint64_t __profcc_wmask = ~(uint64_t)0;
/* Sharing analysis, process-wide: nonzero while the program's one thread runs alone (set once
 * the line shadow is reserved, before any initialiser; cleared before a second thread is
 * created, set again when one is left: rt/src/analyses/sharing.rs). Then the checkers count
 * and return without reading the line shadow. Zero (in .bss, and in a library's stubs): every
 * check reads the shadow. */
__attribute__((visibility("default"))) uint64_t __profcc_alone;
/* Countdown to the next sampled access to a tracked line (fs_sample); the inlined hooks
 * decrement it, the runtime re-arms it when it reaches zero. */
__attribute__((tls_model("initial-exec"), visibility("default"))) __thread uint64_t __profcc_hot_cd;

/* NUMA analysis: the thread's page cache (rt/src/analyses/numa.rs gives each thread its own
 * when it starts); until then a scratch cache whose slots hold no page (zero:
 * PROFCC_NUMA_NO_PAGE), so that every access goes through the door. */
_Static_assert(PROFCC_NUMA_NO_PAGE == 0, "a zeroed cache holds no page");
__attribute__((visibility("hidden"))) struct profcc_page_slot profcc_numa_scratch[PROFCC_NUMA_SLOTS];
__attribute__((tls_model("initial-exec"), visibility("default")))
__thread struct profcc_page_slot *__profcc_numa_cache = profcc_numa_scratch;
struct profcc_page_slot **profcc_numa_cache_slot(void) { return &__profcc_numa_cache; }
/* The NUMA hook's door (hooks/numa.c): in C for the caller's address, the place of a first
 * touch (rt/src/analyses/numa.rs does the rest). */
void profcc_numa_page_miss(const void *p, const void *pc);
__attribute__((visibility("default"))) void __profcc_page_miss(const void *p) {
  profcc_numa_page_miss(p, __builtin_return_address(0));
}
/* The out-of-line page counts' door: they pass the access's address themselves. */
__attribute__((visibility("default"), preserve_most)) void __profcc_page_miss_at(const void *p,
                                                                                 const void *pc) {
  profcc_numa_page_miss(p, pc);
}

/* Regions: the gate and the sampled regions' skip slots (profcc_hooks.h). Zero: the gate shut
 * and no slot armed, every begin calls the runtime. Aligned to 8, not the 16 clang gives a
 * large array: the runtime's TLS sections must not raise the alignment of the program's
 * (its .tbss would start elsewhere, and its thread-locals lose their native residues). */
__attribute__((tls_model("initial-exec"), visibility("default"), aligned(8)))
__thread uint64_t __profcc_roi_skip[PROFCC_ROI_SKIP_WORDS];
uint64_t *profcc_roi_skip_slot(void) { return __profcc_roi_skip; }
/* Regions: the call word a clone's prologue reads (0: count the call as its caller does; above
 * 1: take one off and run the original; 1: ask the runtime). Zero: every call counted. */
__attribute__((tls_model("initial-exec"), visibility("default"), aligned(8)))
__thread uint64_t __profcc_roi_calls;
uint64_t *profcc_roi_calls_slot(void) { return &__profcc_roi_calls; }

uint64_t *profcc_alone_slot(void) { return &__profcc_alone; }

void profcc_sharing_tls(uint64_t **me, uint64_t **rb, uint64_t **wmask, uint64_t **countdown) {
  *me = &__profcc_me;
  *rb = &__profcc_rb;
  *wmask = &__profcc_wmask;
  *countdown = &__profcc_hot_cd;
}

/* The door's object (hooks/sharing_door.c) comes with this one out of the runtime archive.
 * An instrumented library defines stubs of every hook symbol (hooks/stub.c); linked before
 * the archive, it would otherwise satisfy the executable's calls of the door. The other
 * symbols the stubs define are in this object or in the runtime's Rust object, which the
 * link always takes (`-u __profcc_force_link`, and the Rust code refers to this object). */
extern const char profcc_door_anchor;
/* The stubs' constructor looks for it (a weak reference) to tell a profcc-built executable. */
__attribute__((visibility("default"))) const char __profcc_runtime = 1;
__attribute__((used)) static const char *const profcc_door_ref = &profcc_door_anchor;

/* Reserve the shadow before any initialiser runs: .preinit_array entries of the executable
 * run before the constructors of every shared library, so even an instrumented library's
 * constructor finds it mapped. */
void profcc_sharing_preinit(void);
void profcc_numa_preinit(void);
static void profcc_preinit(void) {
  profcc_sharing_preinit();
  profcc_numa_preinit();
}
__attribute__((section(".preinit_array"), used)) static void (*profcc_preinit_entry)(void) =
    profcc_preinit;

/* atexit and pthread_atfork are libc_nonshared.a wrappers that call __cxa_atexit and
 * __register_atfork through the PLT: a `.got.plt` slot the program's clang-22 build does not
 * have, which would move its `.data` (ARCHITECTURE.md, "Native layout"). The runtime calls the
 * libc functions themselves, through the GOT (-fno-plt). */
extern void *__dso_handle;
extern int __cxa_atexit(void (*)(void *), void *, void *);
extern int __register_atfork(void (*)(void), void (*)(void), void (*)(void), void *);
int profcc_atexit(void (*fn)(void)) { return __cxa_atexit((void (*)(void *))fn, 0, &__dso_handle); }
int profcc_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
  return __register_atfork(prepare, parent, child, &__dso_handle);
}
