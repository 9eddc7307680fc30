/* Pointer chase through a random cyclic permutation of 1M nodes, 4M steps. */
#include <stdio.h>
#include <stdlib.h>
#define N (1u << 20)
struct node { struct node *next; long pad[7]; };
int main(void) {
  struct node *n = malloc(N * sizeof *n);
  unsigned *perm = malloc(N * sizeof *perm);
  for (unsigned i = 0; i < N; i++) perm[i] = i;
  unsigned x = 12345;
  for (unsigned i = N - 1; i > 0; i--) {
    x = x * 1103515245u + 12345u;
    unsigned j = (x >> 4) % (i + 1), t = perm[i];
    perm[i] = perm[j]; perm[j] = t;
  }
  for (unsigned i = 0; i < N; i++) n[perm[i]].next = &n[perm[(i + 1) % N]];
  struct node *p = &n[perm[0]];
  for (unsigned i = 0; i < 4 * N; i++) p = p->next;
  printf("%ld\n", (long)(p - n));
  free(perm);
  free(n);
  return 0;
}
