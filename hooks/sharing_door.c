/* The cold door of the inlined sharing hooks (sharing.c, next to this file). Compiled into
 * the runtime archive (rt/build.rs) with clang-22 for the preserve_most calling convention.
 *
 * A hot line's access arrives here only when the hook's countdown reached zero (the thread's
 * sampled access, one in fs_sample) or when it is its group's write-volume sample; the latter
 * leaves at once unless it is also due. Everything else goes to the runtime
 * (`profcc_line_slow`, rt/src/analyses/sharing.rs), which re-arms a spent countdown.
 *
 * About one hot line's due access in LATENCY_EVERY is timed here, first thing, before
 * the runtime's work can let another thread take the line: a reload of the byte between two
 * rdtscp (docs/model.md; about 50 ns each on this project's VM, hence not every one: every
 * LATENCY_EVERY-th due access of the thread, the due accesses being a random period apart; not
 * the site's count, since a read's slot is its own and holds no count). Its ticks reach
 * the runtime in `due` (2 + ticks; 1: due, not timed; 0: not due). */
#define LATENCY_EVERY 8
#include "profcc_hooks.h"

void profcc_line_slow(const void *p, uint64_t info, uint64_t *slot, int due);
void profcc_range_lines(const void *p, uint64_t len, uint64_t info, uint64_t *slot);

/* rt/csrc/tls.c refers to it: an executable always takes this object from the runtime
 * archive, even when an instrumented library on the link line already defines the door (its
 * stub, hooks/stub.c): a regular definition wins over a shared library's. */
__attribute__((visibility("hidden"))) const char profcc_door_anchor = 0;

__attribute__((tls_model("initial-exec"))) static __thread uint32_t due_seen;

__attribute__((preserve_most)) void __profcc_slow(const void *p, uint64_t *slot, uint64_t info) {
  uint64_t a = (uint64_t)p;
  if (a >> PROFCC_APP_BITS) return;
  uint64_t w = *(volatile uint64_t *)PROFCC_LINE_SHADOW_OF(a);
  int sampled = (info & PROFCC_INFO_WRITE) && (*slot & __profcc_wmask) == 0;
  int due = __profcc_hot_cd == 0;
  if ((w & PROFCC_HOT) && !due && !sampled) return;
#if defined(__x86_64__)
  if ((w & PROFCC_HOT) && due && ++due_seen % LATENCY_EVERY == 0) {
    unsigned aux;
    uint64_t t0 = __builtin_ia32_rdtscp(&aux);
    (void)*(volatile const unsigned char *)p;
    uint64_t dt = __builtin_ia32_rdtscp(&aux) - t0;
    due = 2 + (int)(dt < 0x3fffffff ? dt : 0x3fffffff);
  }
#endif
  profcc_line_slow(p, info | ((uint64_t)sampled << PROFCC_INFO_SAMPLED_SHIFT), slot, due);
}

/* The range hooks' door (a fixed-size access longer than a line, a memory intrinsic): the
 * runtime (`profcc_range_lines`) takes the lines whose check would not leave at once, so
 * a range none of whose lines needs anything stops here, before the runtime's per-call work
 * (its thread's words, read through a call): most memcpys copy a line or two the thread
 * owns already (the sqlite driver's records). A range samples no write volume; addresses
 * past the user space go on, and the runtime drops them. */
void __profcc_range_slow(const void *p, uint64_t len, uint64_t info, uint64_t *slot) {
  uint64_t a = (uint64_t)p, end = a + len;
  /* (A thread the runtime has not seen, owner word 0, gets nothing from either side.) */
  if (end >= a && !(end >> PROFCC_APP_BITS)) {
    uint64_t want = (info & PROFCC_INFO_WRITE) ? __profcc_me : __profcc_rb;
    uint64_t mask = (info & PROFCC_INFO_WRITE) ? PROFCC_WRITE_MASK : (PROFCC_HOT | want);
    uint64_t line = a >> PROFCC_LINE_SHIFT << PROFCC_LINE_SHIFT;
    for (; line < end; line += (uint64_t)1 << PROFCC_LINE_SHIFT)
      if ((*(volatile uint64_t *)PROFCC_LINE_SHADOW_OF(line) & mask) != want)
        break;
    if (line >= end)
      return;
  }
  profcc_range_lines(p, len, info, slot);
}
