/* Larson-like server churn (the shape of mimalloc-bench's larson, written here): each of T
 * threads (argv[1], default 1) owns SLOTS slots and, ROUNDS times, frees a random slot's block
 * and allocates a new one of a random size in 8..1032 bytes, touching its first bytes. Every
 * 64th block is handed to the next thread's slots instead (freed there: cross-thread frees).
 * A fixed xorshift seed per thread: the same work on every run. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef ROUNDS
#define ROUNDS 3000000L
#endif
#define SLOTS 4096
#define MAXT 64
static void *slots[MAXT][SLOTS];
static int nthreads = 1;
static unsigned long rnd(unsigned long *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}
static void *work(void *arg) {
  long me = (long)arg;
  unsigned long seed = 0x9e3779b97f4a7c15ul * (unsigned long)(me + 1);
  unsigned long sum = 0;
  for (long i = 0; i < ROUNDS; i++) {
    long owner = (i & 63) == 0 ? (me + 1) % nthreads : me;
    unsigned long r = rnd(&seed);
    void **slot = &slots[owner][r % SLOTS];
    size_t n = 8 + (r >> 20) % 1025;
    char *p = malloc(n);
    memset(p, (int)i, n < 16 ? n : 16);
    void *old = __atomic_exchange_n(slot, p, __ATOMIC_ACQ_REL);
    if (old) {
      sum += *(unsigned char *)old;
      free(old);
    }
  }
  return (void *)sum;
}
int main(int argc, char **argv) {
  nthreads = argc > 1 ? atoi(argv[1]) : 1;
  if (nthreads < 1 || nthreads > MAXT) nthreads = 1;
  pthread_t th[MAXT];
  for (long i = 0; i < nthreads; i++) pthread_create(&th[i], NULL, work, (void *)i);
  unsigned long total = 0;
  for (int i = 0; i < nthreads; i++) {
    void *r;
    pthread_join(th[i], &r);
    total += (unsigned long)r;
  }
  for (int t = 0; t < nthreads; t++)
    for (int i = 0; i < SLOTS; i++) free(slots[t][i]);
  printf("%d threads done\n", nthreads);
  return total == 1; /* never: keeps the sum live */
}
