/* The allocator analysis's channels (rt/src/analyses/allocator.rs; per mutex:
 * allocator/locks.rs): the calls an allocator makes inside the program's operation, through
 * the mmap family (mmap, munmap, mremap, madvise, mprotect, sbrk and brk: each timed) and its
 * mutexes (each lock and trylock counted by how it went, a contended lock's wait timed, and
 * the time from taking a mutex to its unlock inside the same operation its hold time). The
 * interposers forward and call these hooks: `CHANNEL`/`CHANNEL_ON` around the real call,
 * `mutex_locked`, `mutex_tried`, `mutex_unlocking` and `took` (the mutexes).
 *
 * Part of rt/csrc/interpose.c's translation unit, like timing.h (included once, after the
 * tail path's `tail_inside`), so that the checks inline into the interposers: the mutex
 * interposers ask `op_running` on every call. */
#ifndef PROFCC_ALLOCATOR_CHANNELS_H
#define PROFCC_ALLOCATOR_CHANNELS_H

/* The program's operation (OP_ + 1) whose allocator call runs now, for the channels: the
 * full path's mark, or the tail path's when the caller is inside it; 0: none. */
__attribute__((always_inline)) static inline uint32_t op_running(void) {
    uint32_t op = tls.alloc_op;
    /* (the switch before the stack: the marker is left with the analysis off too, and the
     * mutex interposers ask on every call) */
    if (LIKELY(op == 0) && UNLIKELY(tls.tail_slot != 0) &&
        __atomic_load_n(&profcc_alloc_timing, __ATOMIC_RELAXED) && tail_inside())
        op = (uint32_t)(tls.tail_slot & TAIL_OP_MASK);
    return op;
}

/* A call the allocator made inside the program's operation (on mutex `m`, else 0): timed
 * for the analysis. */
#define CHANNEL_ON(ch, m, call)                                                     \
    ({                                                                              \
        uint32_t op_ = op_running();                                                \
        uint64_t t0_ = UNLIKELY(op_ != 0) ? __builtin_ia32_rdtsc() : 0;             \
        long r_ = (call);                                                           \
        if (UNLIKELY(op_ != 0)) {                                                   \
            int e_ = errno;                                                         \
            profcc_alloc_channel((ch), op_ - 1, __builtin_ia32_rdtsc() - t0_, (m)); \
            errno = e_;                                                             \
        }                                                                           \
        r_;                                                                         \
    })
#define CHANNEL(ch, call) CHANNEL_ON(ch, 0, call)

/* The allocator's mutexes inside the program's operation `op` (op_running, not 0). */
/* `m` was taken: its hold time runs from now (up to HELD mutexes at once). */
__attribute__((always_inline)) static inline void took(pthread_mutex_t *m) {
    if (tls.nheld < HELD) {
        tls.held[tls.nheld] = m;
        tls.held_at[tls.nheld++] = __builtin_ia32_rdtsc();
    }
}
/* pthread_mutex_lock's first try returned `r` (not EBUSY: taken, or an error). */
__attribute__((always_inline)) static inline void mutex_locked(uint32_t op, pthread_mutex_t *m, int r) {
    profcc_alloc_channel(CH_MUTEX, op - 1, 0, m);
    if (r == 0) took(m);
}
/* pthread_mutex_trylock returned `r` (errno kept). */
__attribute__((always_inline)) static inline void mutex_tried(uint32_t op, pthread_mutex_t *m, int r) {
    int e = errno;
    profcc_alloc_channel(r == EBUSY ? CH_MUTEX_BUSY : CH_MUTEX_TRY, op - 1, 0, m);
    if (r == 0) took(m);
    errno = e;
}
/* `m` is about to be unlocked: its hold time, if the operation took it (errno kept). */
__attribute__((always_inline)) static inline void mutex_unlocking(uint32_t op, pthread_mutex_t *m) {
    for (uint32_t i = tls.nheld; i-- > 0;) {
        if (tls.held[i] != m) continue;
        uint64_t held = __builtin_ia32_rdtsc() - tls.held_at[i];
        tls.held[i] = tls.held[--tls.nheld];
        tls.held_at[i] = tls.held_at[tls.nheld];
        int e = errno;
        profcc_alloc_channel(CH_MUTEX_HOLD, op - 1, held, m);
        errno = e;
        break;
    }
}

#endif /* PROFCC_ALLOCATOR_CHANNELS_H */
