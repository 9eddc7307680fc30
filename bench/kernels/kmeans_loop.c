/* kmeans-like distance loop (after Phoenix 2.0 kmeans' find_clusters/get_sq_dist): for each
 * point, the squared distance to every cluster centre over a short inner loop whose trip
 * count (dim, 3) is known only at run time. Single-threaded: measures the per-iteration cost
 * of counting and sharing checks in a 3-iteration loop nested in two longer ones. */
#include <stdio.h>
#include <stdlib.h>

static int dim = 3;

static unsigned sq_dist(const int *p, const int *c) {
  unsigned s = 0;
  for (int d = 0; d < dim; d++)
    s += (unsigned)((p[d] - c[d]) * (p[d] - c[d]));
  return s;
}

int main(int argc, char **argv) {
  int npoints = 20000, nmeans = 100, rounds = 150;
  if (argc > 1) dim = atoi(argv[1]);
  /* Rows allocated one by one, as Phoenix does. */
  int **points = malloc(sizeof(int *) * npoints);
  int **means = malloc(sizeof(int *) * nmeans);
  for (int i = 0; i < npoints; i++) points[i] = malloc(sizeof(int) * dim);
  for (int j = 0; j < nmeans; j++) means[j] = malloc(sizeof(int) * dim);
  int *cluster = calloc(npoints, sizeof(int));
  unsigned seed = 1;
  for (int i = 0; i < npoints; i++)
    for (int d = 0; d < dim; d++) points[i][d] = (int)((seed = seed * 1103515245 + 12345) >> 16) % 1000;
  for (int j = 0; j < nmeans; j++)
    for (int d = 0; d < dim; d++) means[j][d] = points[j * 7 % npoints][d];
  long moved = 0;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < npoints; i++) {
      unsigned best = ~0u;
      int which = 0;
      for (int j = 0; j < nmeans; j++) {
        unsigned d = sq_dist(points[i], means[j]);
        if (d < best) {
          best = d;
          which = j;
        }
      }
      moved += cluster[i] != which;
      cluster[i] = which;
    }
    /* Move each centre a little so that rounds differ. */
    for (int j = 0; j < nmeans; j++)
      for (int d = 0; d < dim; d++) means[j][d] += (r & 1) ? 1 : -1;
  }
  printf("%ld\n", moved);
  for (int i = 0; i < npoints; i++) free(points[i]);
  for (int j = 0; j < nmeans; j++) free(means[j]);
  free(points);
  free(means);
  free(cluster);
  return 0;
}
