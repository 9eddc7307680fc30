/* Two threads, each summing and scaling its own half of a 32 MiB array, 32 passes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N (4u << 20)
static double *a;
static double sums[2 * 8];
static void *work(void *arg) {
  long id = (long)arg;
  unsigned lo = id * (N / 2), hi = lo + N / 2;
  double s = 0;
  for (int r = 0; r < 32; r++)
    for (unsigned i = lo; i < hi; i++) { s += a[i]; a[i] = a[i] * 0.999 + 1.0; }
  sums[id * 8] = s;
  return NULL;
}
int main(void) {
  a = malloc(N * sizeof *a);
  for (unsigned i = 0; i < N; i++) a[i] = i & 1023;
  pthread_t t[2];
  for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  printf("%.3e\n", sums[0] + sums[8]);
  free(a);
  return 0;
}
