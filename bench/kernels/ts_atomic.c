/* True sharing: 2 threads atomically increment one global counter (C11 atomic_fetch_add).
 * Expected finding: true sharing on `counter`, no fix by padding. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#define THREADS 2
#ifndef ITERS
#define ITERS 40000000L
#endif
static _Atomic long counter;
static void *work(void *arg) {
  (void)arg;
  for (long i = 0; i < ITERS; i++) atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
  return NULL;
}
int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%ld\n", atomic_load(&counter));
  return 0;
}
