/* The NUMA analysis's waits (migration risk, rt/src/analyses/numa.rs `profcc_numa_waited`):
 * a thread that blocks may wake on another node (NumaPerf's proxy for migrations): each
 * contended mutex or spin lock, each condition-variable wait, each barrier wait but the last
 * arrival's, each semaphore wait that found it at zero is counted for the waiting thread.
 * Locks are tried first: an uncontended lock costs one trylock, as the lock itself would.
 * Here: the interposers of the spin lock, the condition variable, the barrier and the
 * semaphore, and `waited`, the hook they call (as does pthread_mutex_lock in interpose.c,
 * which the allocator analysis's channels share, and, through `profcc_wait_seen`, the
 * link-time wrappers of rt/src/analyses/numa/wrap.c).
 *
 * Part of rt/csrc/interpose.c's translation unit, not a header of its own: interpose.c
 * includes it once, after the tail path (`not_programs`) and `REAL_WAIT`, so that `waited`'s
 * check inlines into each interposer, with the interposer's own frame (`not_programs` reads
 * it). Its interposers are weak like every other: their `#pragma weak` lines are
 * interpose.c's, the one list of the interposed names (xtask and the driver read it). */
#ifndef PROFCC_NUMA_WAITS_H
#define PROFCC_NUMA_WAITS_H

/* The kinds, in the order of numa.rs's waits by kind (numa/wrap.c repeats the two it uses). */
enum { WAIT_MUTEX, WAIT_SPIN, WAIT_COND, WAIT_BARRIER, WAIT_SEM };
/* Not a wait: the last arrival at a barrier (threads met there; numa.rs looks at its page
 * cache again, as after a wait, and counts nothing). */
enum { WAIT_MET = 5 };
void profcc_numa_waited(int kind);
/* The calling thread waited: counted when the wait is the program's. */
static void waited(int kind) {
    if (LIKELY(!not_programs())) {
        int e = errno;
        tls.in_rt = 1;
        profcc_numa_waited(kind);
        tls.in_rt = 0;
        errno = e;
    }
}


int pthread_spin_lock(pthread_spinlock_t *l) {
    if (pthread_spin_trylock(l) == 0) return 0;
    while (pthread_spin_trylock(l) != 0) __builtin_ia32_pause();
    waited(WAIT_SPIN);
    return 0;
}

typedef int (*cond_wait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*barrier_wait_fn)(pthread_barrier_t *);
typedef int (*sem_wait_fn)(sem_t *);
/* For the link-time wrappers (numa/wrap.c): a wait they saw. */
void profcc_wait_seen(int kind) { waited(kind); }

/* libc.a's internal names: the real functions in a static link. */
int __pthread_cond_wait(pthread_cond_t *, pthread_mutex_t *) __attribute__((weak));
int __pthread_cond_timedwait(pthread_cond_t *, pthread_mutex_t *, const struct timespec *)
    __attribute__((weak));
int __pthread_barrier_wait(pthread_barrier_t *) __attribute__((weak));
int __new_sem_wait(sem_t *) __attribute__((weak));

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    int r = REAL_WAIT(cond_wait_fn, "pthread_cond_wait", __pthread_cond_wait)(c, m);
    waited(WAIT_COND);
    return r;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
    int r = REAL_WAIT(cond_timedwait_fn, "pthread_cond_timedwait", __pthread_cond_timedwait)(c, m, t);
    waited(WAIT_COND);
    return r;
}

int pthread_barrier_wait(pthread_barrier_t *b) {
    int r = REAL_WAIT(barrier_wait_fn, "pthread_barrier_wait", __pthread_barrier_wait)(b);
    /* the last arrival (SERIAL_THREAD) did not wait */
    waited(r == 0 ? WAIT_BARRIER : WAIT_MET);
    return r;
}

int sem_wait(sem_t *s) {
    int e = errno;
    if (sem_trywait(s) == 0) return 0;
    errno = e;
    int r = REAL_WAIT(sem_wait_fn, "sem_wait", __new_sem_wait)(s);
    waited(WAIT_SEM);
    return r;
}

#endif /* PROFCC_NUMA_WAITS_H */
