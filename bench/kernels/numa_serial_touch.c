/* NUMA kernel: a serial first touch, then parallel sweeps (NumaPerf's and NUMAPROF's classic
 * finding: one thread placed every page; under numa=thread every worker access is remote).
 * argv[1]: worker threads (default 2). 32 MiB of doubles, 60 sweeps. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N (4 << 20)
#define SWEEPS 60
static double *a;
static int nthreads = 2;
struct part { int id; double sum; };

static void *sweep(void *arg) {
  struct part *p = arg;
  long lo = (long)N * p->id / nthreads, hi = (long)N * (p->id + 1) / nthreads;
  double s = 0;
  for (int r = 0; r < SWEEPS; r++)
    for (long i = lo; i < hi; i++) s += a[i] * 0.5;
  p->sum = s;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nthreads = atoi(argv[1]);
  a = malloc(sizeof(double) * N);
  for (long i = 0; i < N; i++) a[i] = (double)(i & 1023); /* serial first touch */
  pthread_t t[64];
  struct part parts[64];
  for (int k = 0; k < nthreads; k++) {
    parts[k] = (struct part){k, 0};
    pthread_create(&t[k], NULL, sweep, &parts[k]);
  }
  double s = 0;
  for (int k = 0; k < nthreads; k++) {
    pthread_join(t[k], NULL);
    s += parts[k].sum;
  }
  printf("%.0f\n", s);
  free(a);
  return 0;
}
