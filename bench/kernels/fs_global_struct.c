/* False sharing on fields of a global struct: thread 0 updates `hits`/`bytes`, thread 1
 * updates `misses`/`errors`, all in one cache line. volatile keeps the stores at -O2.
 * Expected finding: false sharing on the global `stats`. With -DPADDED (the padded twin)
 * `stats` is aligned to 64 and `misses` starts the next line. */
#include <pthread.h>
#include <stdio.h>
#define THREADS 2
#ifndef ITERS
#define ITERS 75000000L
#endif
struct stats {
  long hits;
  long bytes;
#ifdef PADDED
  char pad[48];
#endif
  long misses;
  long errors;
};
static volatile struct stats stats __attribute__((aligned(64)));
static void *work(void *arg) {
  long id = (long)arg;
  for (long i = 0; i < ITERS; i++) {
    if (id == 0) {
      stats.hits++;
      stats.bytes += i & 63;
    } else {
      stats.misses++;
      stats.errors += i & 1;
    }
  }
  return NULL;
}
int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%ld %ld %ld %ld\n", stats.hits, stats.bytes, stats.misses, stats.errors);
  return 0;
}
