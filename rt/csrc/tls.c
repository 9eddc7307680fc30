/* The thread-local word the inlined fast path reads. Defined in C because stable Rust
 * cannot give a thread-local a fixed symbol name, an initial-exec model and an initialiser
 * that is the address of another object. */
#include <stdint.h>

/* Slots of one counter array: 2 x (registered sites + limbo); must equal counts::SLOTS. */
#define PROFCC_SLOTS (2u * ((1u << 22) + (1u << 20)))

/* Where a thread counts until the runtime gives it its own array (done before any user code
 * runs on a thread it created, and in the first constructor for the main thread). Only
 * threads started behind the runtime's back (raw clone) keep counting here; the profile
 * reports them as one pseudo-thread. Zero-fill BSS: costs address space, not memory. */
__attribute__((visibility("hidden"))) uint64_t profcc_scratch_counts[PROFCC_SLOTS];

/* Per-thread counter array: [2*site] = executions, [2*site+1] = bytes of run-time-length
 * accesses. Never null, so the fast path needs no branch. */
__attribute__((tls_model("initial-exec"), visibility("default")))
__thread uint64_t *__profcc_counts = profcc_scratch_counts;

uint64_t **profcc_counts_slot(void) { return &__profcc_counts; }
uint64_t *profcc_scratch(void) { return profcc_scratch_counts; }
