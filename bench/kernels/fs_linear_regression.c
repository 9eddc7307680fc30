/* The pattern of Phoenix's linear_regression: a calloc'ed array of 64-byte per-thread
 * argument structs, each thread summing its points into its own struct's fields. glibc's
 * calloc put that array at 48 mod 64, so every struct straddles two lines and each line is
 * written by two threads; here the array starts 48 bytes past a line boundary by construction,
 * so the layout does not depend on the heap's state. At -O0 every `+=` is a load and a store
 * of the struct (false sharing); at -O2 the sums live in registers and padding gains nothing.
 * With -DPADDED (the padded twin) the array starts on a line boundary: one struct per line. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 2
#ifndef POINTS
#define POINTS (1L << 21)
#endif
#ifndef REPS
#define REPS 16
#endif
#ifdef PADDED
#define SHIFT 0
#else
#define SHIFT 48
#endif
typedef struct {
  int x, y;
} point_t;
typedef struct {
  pthread_t tid;
  point_t *points;
  long num_elems;
  long long SX, SY, SXX, SYY, SXY;
} lreg_args; /* 64 bytes */
static void *linear_regression_pthread(void *arg) {
  lreg_args *args = (lreg_args *)arg;
  for (int r = 0; r < REPS; r++)
    for (long i = 0; i < args->num_elems; i++) {
      args->SX += args->points[i].x;
      args->SXX += args->points[i].x * args->points[i].x;
      args->SY += args->points[i].y;
      args->SYY += args->points[i].y * args->points[i].y;
      args->SXY += args->points[i].x * args->points[i].y;
    }
  return NULL;
}
int main(void) {
  point_t *points = malloc(THREADS * POINTS * sizeof *points);
  for (long i = 0; i < THREADS * POINTS; i++) {
    points[i].x = (int)(i * 7 % 101);
    points[i].y = (int)(i * 13 % 97);
  }
  char *raw = calloc(1, THREADS * sizeof(lreg_args) + 128);
  lreg_args *tid_args = (lreg_args *)(((unsigned long)raw + 63) / 64 * 64 + SHIFT);
  for (int i = 0; i < THREADS; i++) {
    tid_args[i].points = points + i * POINTS;
    tid_args[i].num_elems = POINTS;
    pthread_create(&tid_args[i].tid, NULL, linear_regression_pthread, &tid_args[i]);
  }
  long long SX = 0, SY = 0, SXX = 0, SYY = 0, SXY = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(tid_args[i].tid, NULL);
    SX += tid_args[i].SX;
    SY += tid_args[i].SY;
    SXX += tid_args[i].SXX;
    SYY += tid_args[i].SYY;
    SXY += tid_args[i].SXY;
  }
  printf("%lld %lld %lld %lld %lld\n", SX, SY, SXX, SYY, SXY);
  free(raw);
  free(points);
  return 0;
}
