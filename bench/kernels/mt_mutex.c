/* Lock-heavy: 2 threads increment one shared counter, each increment under a pthread mutex
 * (the mutex and the counter share a cache line). Expected: true sharing on the counter's line
 * (the mutex word is written by libc, which is not instrumented). */
#include <pthread.h>
#include <stdio.h>
#define THREADS 2
#ifndef ITERS
#define ITERS 8000000L
#endif
static struct {
  pthread_mutex_t lock;
  long count;
} shared = {PTHREAD_MUTEX_INITIALIZER, 0};
static void *work(void *arg) {
  (void)arg;
  for (long i = 0; i < ITERS; i++) {
    pthread_mutex_lock(&shared.lock);
    shared.count++;
    pthread_mutex_unlock(&shared.lock);
  }
  return NULL;
}
int main(void) {
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, NULL);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  printf("%ld\n", shared.count);
  return 0;
}
