/* Read-mostly: 4 threads look up a shared 32 KiB table (4096 longs) at pseudo-random indices;
 * one lookup in 4096 also writes the entry back. Expected: read-mostly finding(s) on `table`
 * (or nothing, when too few writes invalidate to reach the threshold). */
#include <pthread.h>
#include <stdio.h>
#define THREADS 4
#define SIZE 4096
#ifndef ITERS
#define ITERS 36000000L
#endif
static long table[SIZE];
static long sums[THREADS * 8];
static void *work(void *arg) {
  long id = (long)arg;
  unsigned long x = 0x9e3779b97f4a7c15ul * (id + 1), s = 0;
  for (long i = 0; i < ITERS; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    unsigned k = x & (SIZE - 1);
    s += table[k];
    if ((x >> 52) == 0) /* about one in 4096 */
      table[k] = (long)(s & 0xffff);
  }
  sums[id * 8] = (long)s;
  return NULL;
}
int main(void) {
  for (long i = 0; i < SIZE; i++) table[i] = i * 7;
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  long s = 0;
  for (int i = 0; i < THREADS; i++) s += sums[i * 8];
  printf("%ld\n", s);
  return 0;
}
