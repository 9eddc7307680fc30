#include <stdlib.h>
#include <stdio.h>
#include <assert.h>
static inline void *CALLOC(size_t n, size_t s) { void *t = calloc(n, s); assert(t); return t; }
void *xmalloc(size_t n) { void *p = malloc(n); if (!p) { perror("x"); exit(1); } return p; }
void *xxmalloc(size_t n) { return xmalloc(n); }
void *notwrap(size_t n) { long *p = malloc(n); p[0] = 1; return p; }
long *g;
int main(void) { g = CALLOC(4, 8); g[1] = 2; long *q = xxmalloc(8); *q = 3; return (int)(long)notwrap(8); }
