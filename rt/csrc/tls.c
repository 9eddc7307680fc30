/* The thread-local words the inlined fast path reads. Defined in C because stable Rust
 * cannot give a thread-local a fixed symbol name and the initial-exec TLS model. */
#include <stdint.h>

/* Per-thread counter array: [2*site] = executions, [2*site+1] = bytes. Null until the
 * thread's first slow-path call maps it. */
__attribute__((tls_model("initial-exec"), visibility("default")))
__thread uint64_t *__profcc_counts = 0;

uint64_t **profcc_counts_slot(void) { return &__profcc_counts; }
