/* Hook stubs for instrumented shared libraries: everything an instrumented module refers to
 * (profcc_hooks.h, the module constructor's `__profcc_register_module`), defined weakly.
 *
 * The runtime is linked into executables only (driver/src/exec.rs). A shared link instead
 * gets libprofcc_stub.a (this file, compiled by passes/build.rs; the linker takes it only
 * when the library has instrumented code), so the library links with `-z defs` and loads
 * into any program:
 * - in a profcc-built executable the executable's definitions win (it exports `__profcc_*`
 *   and comes first in the dynamic linker's lookup order): the library is profiled and none
 *   of the stubs below run;
 * - in any other program (gdb, a clang-22 main, dlopen from Python) these definitions are
 *   used: the library is not profiled and runs as its clang-22 build does. Its counts land
 *   in a scratch array nobody reads; its sharing checks read a zero shadow word (owner word
 *   and reader bit 0, no write sample), so they never leave through the door.
 *
 * No libc: the library may be linked with -nostdlib; the two system calls are made directly.
 * Keep in step with rt/csrc/tls.c (the runtime's definitions of the same words). */
#include "profcc_hooks.h"

#define STUB __attribute__((weak, visibility("default")))
#define STUB_TLS __attribute__((weak, visibility("default"), tls_model("initial-exec"))) __thread

/* A module that has not registered counts at [LIMBO, LIMBO + MAX_MODULE_SITES) of its thread's
 * array; here that window is all there is. Zero-fill BSS: address space, not memory. */
__attribute__((visibility("hidden")))
uint64_t profcc_stub_counts[PROFCC_COUNTER_STRIDE * (uint64_t)PROFCC_MAX_MODULE_SITES];

STUB_TLS uint64_t *__profcc_counts =
    (uint64_t *)((uintptr_t)profcc_stub_counts -
                 PROFCC_COUNTER_STRIDE * (uint64_t)PROFCC_LIMBO * sizeof(uint64_t));
STUB_TLS uint64_t __profcc_me;
STUB_TLS uint64_t __profcc_rb;
STUB_TLS uint64_t __profcc_wmask = ~(uint64_t)0;
STUB_TLS uint64_t __profcc_hot_cd;
/* Zero: the checks read the shadow as in any multi-threaded program (and never leave through
 * the door); the inlined checks' stores of a lone thread never run. */
STUB uint64_t __profcc_alone;
/* The gate never opens: every sampled begin calls the take below, which runs the plain copy. */
STUB_TLS uint64_t __profcc_roi_skip[PROFCC_ROI_SKIP_WORDS] __attribute__((aligned(8)));
/* Zero: every clone counts its calls (in the scratch array below). */
STUB_TLS uint64_t __profcc_roi_calls __attribute__((aligned(8)));
/* NUMA: a scratch cache whose slots hold no page (zero: PROFCC_NUMA_NO_PAGE): every access
 * calls the door, which does nothing. Slow (a call per access), but the library runs. In .bss:
 * an initialised array in .data would shift the library's globals. */
__attribute__((visibility("hidden"))) struct profcc_page_slot profcc_stub_numa_cache[PROFCC_NUMA_SLOTS];
STUB_TLS struct profcc_page_slot *__profcc_numa_cache = profcc_stub_numa_cache;
STUB void __profcc_page_miss(const void *p) { (void)p; }
STUB __attribute__((preserve_most)) void __profcc_page_miss_at(const void *p, const void *pc) {
  (void)p, (void)pc;
}

STUB __attribute__((preserve_most)) void __profcc_slow(const void *p, uint64_t *slot,
                                                        uint64_t info) {
  (void)p, (void)slot, (void)info;
}
STUB void __profcc_range_slow(const void *p, uint64_t len, uint64_t info, uint64_t *slot) {
  (void)p, (void)len, (void)info, (void)slot;
}

/* The module stays unregistered (site base LIMBO). */
__attribute__((visibility("hidden"))) void profcc_stub_register_module(const void *desc) {
  (void)desc;
}
void __profcc_register_module(const void *desc)
    __attribute__((weak, alias("profcc_stub_register_module")));
/* The module's destructor (dlclose, exit): nothing was registered. */
STUB void __profcc_unregister_module(const void *desc) { (void)desc; }

static long profcc_stub_syscall6(long n, long a, long b, long c, long d, long e, long f) {
  long r;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(r)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return r;
}

/* Defined by the runtime (rt/csrc/tls.c) and exported by every profcc-built executable; null
 * without it. Only referred to here, so no version script can hide it. */
extern const char __profcc_runtime __attribute__((weak));

static void profcc_stub_say(const char *msg, long len) {
  profcc_stub_syscall6(1 /* SYS_write */, 2, (long)msg, len, 0, 0, 0);
}

/* Without the runtime nothing reserved the line shadow the inlined checks read: map it
 * read-only (zero pages, nothing committed). Runs before the library's other constructors.
 * Two instrumented libraries: the second finds it mapped (EEXIST). */
__attribute__((constructor(PROFCC_CTOR_PRIORITY))) static void profcc_stub_init(void) {
  const char *volatile runtime = &__profcc_runtime;
  void (*volatile reg)(const void *) = __profcc_register_module;
  if (runtime) {
    /* The executable's runtime reserved the shadow (.preinit_array). Its definitions win
     * unless the library's version script made the stubs local (`local: *;`). */
    if (reg == profcc_stub_register_module) {
      static const char hidden[] =
          "profcc: an instrumented library is not profiled: its version script hides the "
          "__profcc_* symbols (list `__profcc_*;` under `global:`)\n";
      profcc_stub_say(hidden, sizeof hidden - 1);
    }
    return;
  }
  enum { SYS_mmap = 9, SYS_munmap = 11, EEXIST = 17 };
  enum { PROT_READ = 1, MAP_PRIVATE = 2, MAP_ANONYMOUS = 0x20, MAP_NORESERVE = 0x4000 };
  enum { MAP_FIXED_NOREPLACE = 0x100000 };
  long want = (long)PROFCC_LINE_SHADOW;
  long got = profcc_stub_syscall6(SYS_mmap, want, (long)PROFCC_LINE_SHADOW_SIZE, PROT_READ,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
                                  -1, 0);
  if (got == want || got == -EEXIST)
    return;
  /* A kernel before 4.17 takes the address as a hint: the mapping is elsewhere, of no use. */
  if (!(got > -4096 && got < 0))
    profcc_stub_syscall6(SYS_munmap, got, (long)PROFCC_LINE_SHADOW_SIZE, 0, 0, 0, 0);
  static const char msg[] = "profcc: an instrumented library cannot reserve its shadow memory "
                            "(16 TiB of address space, MAP_FIXED_NOREPLACE): its instrumented "
                            "code will fault\n";
  profcc_stub_say(msg, sizeof msg - 1);
}

/* Region counters (passes/src/regions.rs): the module stays unregistered and its counts land
 * in a scratch array as large as a module's counters can be (.bss: address space only); the
 * markers do nothing. */
__attribute__((visibility("hidden")))
uint64_t profcc_stub_roi[PROFCC_ROI_ARRAYS * (uint64_t)PROFCC_ROI_MAX_COUNTERS];
STUB void __profcc_roi_register(const void *desc) { (void)desc; }
STUB uint64_t *__profcc_roi_counters(const void *desc) {
  (void)desc;
  return profcc_stub_roi;
}
STUB uint64_t *__profcc_roi_counters_of(const void *desc, uint32_t class) {
  (void)desc, (void)class;
  return profcc_stub_roi;
}
STUB void __profcc_roi_begin(const char *name) { (void)name; }
/* A sampled region's code runs plain. */
STUB uint32_t __profcc_roi_begin_take(const char *name, uint32_t slot, uint32_t tag) {
  (void)name, (void)slot, (void)tag;
  return PROFCC_ROI_PLAIN;
}
STUB void __profcc_roi_plain(const char *name) { (void)name; }
STUB uint64_t *__profcc_roi_call(const void *desc, uint64_t *counters) {
  (void)desc;
  return counters;
}
STUB void __profcc_roi_call_done(void) {}
STUB void __profcc_roi_end(const char *name) { (void)name; }
STUB void __profcc_roi_begin_lit(const char *name) { (void)name; }
STUB void __profcc_roi_end_lit(const char *name) { (void)name; }
