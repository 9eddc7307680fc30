/* True sharing: 2 threads atomically increment one global counter (C11 atomic_fetch_add).
 * Expected finding: true sharing on `counter`, no fix by padding. With -DPADDED (the fixed
 * twin) each thread adds to its own counter on its own line and the sum is taken at the end:
 * the fix true sharing's advice gives (per-thread counters). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#define THREADS 2
#ifndef ITERS
#define ITERS 40000000L
#endif
static _Atomic long counter;
#ifdef PADDED
static struct {
  _Alignas(64) _Atomic long n;
} mine[THREADS];
#endif
static void *work(void *arg) {
#ifdef PADDED
  _Atomic long *c = &mine[(long)arg].n;
#else
  (void)arg;
  _Atomic long *c = &counter;
#endif
  for (long i = 0; i < ITERS; i++) atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
  return NULL;
}
int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
#ifdef PADDED
  for (int i = 0; i < THREADS; i++) counter += mine[i].n;
#endif
  printf("%ld\n", atomic_load(&counter));
  return 0;
}
