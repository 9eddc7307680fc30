/* NUMA kernel: the fix of numa_serial_touch.c. Each worker first touches the part it then
 * sweeps, with the same partition, so every page lives where it is used (all local under
 * numa=thread). argv[1]: worker threads (default 2). 32 MiB of doubles, 60 sweeps. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N (4 << 20)
#define SWEEPS 60
static double *a;
static int nthreads = 2;
struct part { int id; double sum; };

static void *touch_and_sweep(void *arg) {
  struct part *p = arg;
  long lo = (long)N * p->id / nthreads, hi = (long)N * (p->id + 1) / nthreads;
  for (long i = lo; i < hi; i++) a[i] = (double)(i & 1023); /* parallel first touch */
  double s = 0;
  for (int r = 0; r < SWEEPS; r++)
    for (long i = lo; i < hi; i++) s += a[i] * 0.5;
  p->sum = s;
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) nthreads = atoi(argv[1]);
  a = malloc(sizeof(double) * N);
  pthread_t t[64];
  struct part parts[64];
  for (int k = 0; k < nthreads; k++) {
    parts[k] = (struct part){k, 0};
    pthread_create(&t[k], NULL, touch_and_sweep, &parts[k]);
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
