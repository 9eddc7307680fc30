/* Streaming sum over a 64 MiB array, 32 passes: sequential loads. */
#include <stdio.h>
#include <stdlib.h>
#define N (8u << 20)
int main(void) {
  double *a = malloc(N * sizeof *a);
  for (unsigned i = 0; i < N; i++) a[i] = i * 0.5;
  double s = 0;
  for (int r = 0; r < 32; r++)
    for (unsigned i = 0; i < N; i++) s += a[i];
  printf("%.1f\n", s);
  free(a);
  return 0;
}
