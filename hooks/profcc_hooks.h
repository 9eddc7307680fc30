/* What the inlined hook bodies (counting.c, sharing.c) and the runtime's C parts
 * (sharing_door.c, rt/csrc/tls.c) share besides the constants of profcc_abi.h: the
 * thread-local words the hooks read and the doors they call. Declared once here so that the
 * compiler checks the runtime's definitions against what the hooks expect. */
#ifndef PROFCC_HOOKS_H
#define PROFCC_HOOKS_H

#include "profcc_abi.h"

/* Defined by the runtime (rt/csrc/tls.c); the executable's static TLS block. */
/* The thread's counter array (COUNTER_STRIDE u64 per site; never null). */
extern __thread uint64_t *__profcc_counts __attribute__((tls_model("initial-exec")));
/* The thread's owner word (id+1 | its reader bit), its reader bit, write-sample mask. */
extern __thread uint64_t __profcc_me __attribute__((tls_model("initial-exec")));
extern __thread uint64_t __profcc_rb __attribute__((tls_model("initial-exec")));
extern __thread uint64_t __profcc_wmask __attribute__((tls_model("initial-exec")));
/* NUMA analysis: the thread's page cache, NUMA_SLOTS slots (its own; never null). Slot
 * page % NUMA_SLOTS counts the accesses to `page` not yet added to the page's record. */
struct profcc_page_slot {
  uint64_t page;
  uint64_t count;
};
extern __thread struct profcc_page_slot *__profcc_numa_cache __attribute__((tls_model("initial-exec")));
/* The NUMA hook's door (rt/src/analyses/numa.rs): the page holding p is not in its slot; the
 * door adds the slot's counts to their page and gives the slot this page with count 0. */
void __profcc_page_miss(const void *p);
/* The same for the out-of-line page counts (hooks/numa.c), which pass the access's address:
 * cold, and it keeps every register its caller uses (preserve_most). */
__attribute__((cold, preserve_most)) void __profcc_page_miss_at(const void *p, const void *pc);
/* Sharing analysis, process-wide (rt/csrc/tls.c): nonzero while the program's one thread runs
 * alone (from the runtime's first initialiser until a second thread is created, and again
 * once one is left): the checks then read no line shadow (hooks/sharing.c). */
extern uint64_t __profcc_alone;
/* Countdown to the thread's next sampled access to a tracked line (the runtime re-arms it). */
extern __thread uint64_t __profcc_hot_cd __attribute__((tls_model("initial-exec")));
/* Regions (rt/src/analyses/regions.rs): word 0 the gate, then the sampled regions' skip slots
 * (profcc_abi::roi::SKIP_WORDS says what they hold); the pass's inlined begin runs a region's
 * plain copy without a call while its slot holds runs armed for it and the gate is open. */
extern __thread uint64_t __profcc_roi_skip[PROFCC_ROI_SKIP_WORDS] __attribute__((tls_model("initial-exec")));
/* Regions: the call word a clone's prologue reads (docs/regions.md, "Sampling inside an
 * execution"). */
extern __thread uint64_t __profcc_roi_calls __attribute__((tls_model("initial-exec")));

/* The cold door (sharing_door.c, then rt/src/analyses/sharing.rs). slot: the group's counter in the
 * thread's array (gives the site with info >> PROFCC_INFO_SITE_SHIFT and, for writes, the
 * volume sample); info: the PROFCC_INFO_* bits. Kept to three arguments and one call: the code
 * after each access stays small. preserve_most: the callee saves the general registers, so
 * the instrumented function spills nothing around the rarely taken call. The pass declares
 * both doors nonlazybind: a shared library calls them through the GOT, never through a lazy
 * PLT entry (its resolver clobbers r10, which preserve_most keeps). Shared libraries define
 * weak stubs of everything here (stub.c) for programs without the runtime. */
__attribute__((preserve_most)) void __profcc_slow(const void *p, uint64_t *slot, uint64_t info);
/* Defined by the runtime only (rt/csrc/tls.c): shared libraries' stubs (stub.c) refer to it
 * weakly to tell whether the executable has the runtime. */
extern const char __profcc_runtime;
/* Every line of [p, p+len) (rt/src/analyses/sharing.rs). */
void __profcc_range_slow(const void *p, uint64_t len, uint64_t info, uint64_t *slot);

#endif /* PROFCC_HOOKS_H */
