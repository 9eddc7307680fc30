/* Clean streaming: 2 threads, each sums and scales its own 16 MiB chunk of a heap array,
 * 64 passes; results go to padded slots. Expected: no sharing findings. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 2
#ifndef N
#define N (4L << 20)
#endif
#ifndef REPS
#define REPS 64
#endif
static double *a;
static struct { double v; char pad[56]; } __attribute__((aligned(64))) sums[THREADS];
static void *work(void *arg) {
  long id = (long)arg;
  long lo = id * (N / THREADS), hi = lo + N / THREADS;
  double s = 0;
  for (int r = 0; r < REPS; r++)
    for (long i = lo; i < hi; i++) {
      s += a[i];
      a[i] = a[i] * 0.999 + 1.0;
    }
  sums[id].v = s;
  return NULL;
}
int main(void) {
  a = aligned_alloc(64, N * sizeof *a);
  for (long i = 0; i < N; i++) a[i] = i & 1023;
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  double s = 0;
  for (int i = 0; i < THREADS; i++) s += sums[i].v;
  printf("%.3e\n", s);
  free(a);
  return 0;
}
