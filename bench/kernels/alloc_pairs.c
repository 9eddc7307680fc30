/* Allocation path cost: each of T threads (argv[1], default 1) makes PAIRS malloc(40)/free
 * pairs, the loop of issue 12's figures. The block is published through a volatile pointer so
 * the optimiser cannot delete the pair: a thread's own (thread-local), since one pointer written
 * by every thread made the two-thread runs a measurement of that line moving between the cores
 * (docs/history/allocation-path.md, "Two threads of alloc_pairs"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#ifndef PAIRS
#define PAIRS 4000000L
#endif
static __thread void *volatile sink;
static void *work(void *arg) {
  for (long i = 0; i < PAIRS; i++) {
    void *p = malloc(40);
    sink = p;
    free(p);
  }
  return arg;
}
int main(int argc, char **argv) {
  int t = argc > 1 ? atoi(argv[1]) : 1;
  if (t < 1 || t > 64) t = 1;
  pthread_t th[64];
  for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, work, NULL);
  for (int i = 0; i < t; i++) pthread_join(th[i], NULL);
  printf("%ld pairs\n", PAIRS * t);
  return 0;
}
