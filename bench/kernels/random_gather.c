/* Random gather: 32M loads at pseudo-random indices of a 32 MiB table. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define N (4u << 20)
int main(void) {
  uint64_t *t = malloc(N * sizeof *t);
  for (unsigned i = 0; i < N; i++) t[i] = i * 2654435761u;
  uint64_t x = 88172645463325252ull, s = 0;
  for (unsigned i = 0; i < 8 * N; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    s += t[x & (N - 1)];
  }
  printf("%llu\n", (unsigned long long)s);
  free(t);
  return 0;
}
