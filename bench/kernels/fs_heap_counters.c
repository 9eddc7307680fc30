/* False sharing on the heap: 2 threads each increment their own slot of a malloc'd array of
 * per-thread counters (8 bytes apart, one cache line), through a volatile pointer so -O2 keeps
 * every load and store. Expected finding: false sharing on the heap block. With -DPADDED (the
 * padded twin `cargo xtask bench` measures natively) each counter has its own 64-byte line. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 2
#ifndef ITERS
#define ITERS 150000000L
#endif
#ifdef PADDED
#define SLOT 8 /* longs per counter: one line each */
#else
#define SLOT 1
#endif
static volatile long *counters;
static void *work(void *arg) {
  long id = (long)arg;
  for (long i = 0; i < ITERS; i++) counters[id * SLOT]++;
  return NULL;
}
int main(void) {
#ifdef PADDED
  counters = aligned_alloc(64, THREADS * SLOT * sizeof *counters);
  for (int i = 0; i < THREADS * SLOT; i++) counters[i] = 0;
#else
  counters = calloc(THREADS, sizeof *counters);
#endif
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  long s = 0;
  for (int i = 0; i < THREADS; i++) s += counters[i * SLOT];
  printf("%ld\n", s);
  free((void *)counters);
  return 0;
}
