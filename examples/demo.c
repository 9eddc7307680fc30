/* profcc demo: four threads update per-thread counters packed into one cache line
 * (false sharing), sum a large shared array (reads), and allocate from two sites. The
 * threads start together and make several passes, so that they run at the same time even on
 * a busy machine.
 * Build: profcc -O2 -pthread demo.c -o demo; run ./demo; then profcc report <profile>. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define N (1 << 20)
#define PASSES 32

struct counter { long hits; };          /* 8 bytes: four of them share one 64-byte line */
static struct counter *counters;
static double *data;
static pthread_barrier_t start;

static void *worker(void *arg) {
  long id = (long)arg;
  volatile struct counter *c = &counters[id];
  pthread_barrier_wait(&start);
  for (int pass = 0; pass < PASSES; pass++)
    for (int i = id; i < N; i += THREADS) {
      if (data[i] > 0.5)
        c->hits++;                      /* the contended store */
    }
  return NULL;
}

static double *make_data(void) {
  double *d = malloc(N * sizeof *d);
  unsigned s = 1;
  for (int i = 0; i < N; i++) {
    s = s * 1103515245u + 12345u;
    d[i] = (s >> 8) / (double)(1u << 24);
  }
  return d;
}

int main(void) {
  counters = calloc(THREADS, sizeof *counters);
  data = make_data();
  pthread_barrier_init(&start, NULL, THREADS);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, worker, (void *)i);
  long total = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(t[i], NULL);
    total += counters[i].hits;
  }
  printf("values above 0.5: %ld of %d (%d passes)\n", total, N, PASSES);
  free(data);
  free(counters);
  return 0;
}
