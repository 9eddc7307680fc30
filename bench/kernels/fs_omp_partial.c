/* False sharing in an OpenMP reduction written by hand: each thread accumulates into
 * partial[omp_get_thread_num()], neighbouring doubles of one global array (build with
 * -fopenmp). The compiler cannot keep partial[] in a register (it is a global and the index
 * is only known at run time), so every iteration stores. After each parallel region the main
 * thread sums partial[] while the worker is still alive (parked in libomp's pool): thread 0
 * reads thread 1's word a few times per run. Expected: false sharing on `partial`. With
 * -DPADDED (the padded twin) each thread's slot is on its own line (`partial[me * 8]`). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 2
#ifndef N
#define N (1L << 22)
#endif
#ifndef REPS
#define REPS 48
#endif
#ifdef PADDED
#define SLOT 8
#else
#define SLOT 1
#endif
double partial[THREADS * SLOT] __attribute__((aligned(64)));
int main(void) {
  double *x = malloc(N * sizeof *x);
  for (long i = 0; i < N; i++) x[i] = (double)(i & 255) * 0.25;
  double total = 0;
  for (int r = 0; r < REPS; r++) {
#pragma omp parallel num_threads(THREADS)
    {
      int me = omp_get_thread_num();
      partial[me * SLOT] = 0;
#pragma omp for schedule(static)
      for (long i = 0; i < N; i++) partial[me * SLOT] += x[i] * x[i];
    }
    for (int t = 0; t < THREADS; t++) total += partial[t * SLOT];
  }
  printf("%.1f\n", total);
  free(x);
  return 0;
}
