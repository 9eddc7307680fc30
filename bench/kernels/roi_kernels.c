/* Region kernels for `cargo xtask bench --only regions` (docs/regions.md, "Overhead"): one
 * kernel per run, each execution of it one execution of the region named after it.
 *
 *   roi_kernels KERNEL N REPS
 *
 * The long-loop kernels (STREAM's copy, scale, add and triad, CSR SpMV, a transpose, a
 * run-time-sized memcpy) run over N elements; `dot` and `daxpy` are the short-loop case
 * (ZRay's 64-element loops: the markers and the loop entry weigh against 64 iterations);
 * `chase` is an uncountable loop (a linked ring in random order: each step a dependent
 * load). Prints a checksum, so the work cannot be optimised away; the same with and without
 * profcc. */
#include <profcc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
  struct node *next;
  long pad[7];
};

__attribute__((noinline)) static void copy(double *restrict q, const double *restrict p, long n) {
  for (long i = 0; i < n; i++) q[i] = p[i];
}
__attribute__((noinline)) static void scale(double *restrict q, const double *restrict p, double s,
                                            long n) {
  for (long i = 0; i < n; i++) q[i] = s * p[i];
}
__attribute__((noinline)) static void add(double *restrict r, const double *p, const double *q,
                                          long n) {
  for (long i = 0; i < n; i++) r[i] = p[i] + q[i];
}
__attribute__((noinline)) static void triad(double *restrict r, const double *p, const double *q,
                                            double s, long n) {
  for (long i = 0; i < n; i++) r[i] = p[i] + s * q[i];
}
__attribute__((noinline)) static double dot(const double *p, const double *q, long n) {
  double t = 0;
  for (long i = 0; i < n; i++) t += p[i] * q[i];
  return t;
}
__attribute__((noinline)) static void daxpy(double *restrict q, const double *p, double s, long n) {
  for (long i = 0; i < n; i++) q[i] += s * p[i];
}
__attribute__((noinline)) static void spmv(double *out, const int *rp, const int *ci,
                                           const double *v, const double *in, long nrows) {
  for (long i = 0; i < nrows; i++) {
    double t = 0;
    for (int k = rp[i]; k < rp[i + 1]; k++) t += v[k] * in[ci[k]];
    out[i] = t;
  }
}
__attribute__((noinline)) static void transpose(double *restrict dst, const double *src, long m) {
  for (long i = 0; i < m; i++)
    for (long j = 0; j < m; j++) dst[j * m + i] = src[i * m + j];
}
__attribute__((noinline)) static long chase(const struct node *p, long steps) {
  long k = 0;
  while (steps-- > 0) {
    p = p->next;
    k += (long)p & 64;
  }
  return k;
}

static double *vec(long n, double v) {
  double *p = malloc(n * sizeof *p);
  if (!p) {
    fprintf(stderr, "roi_kernels: out of memory\n");
    exit(2);
  }
  for (long i = 0; i < n; i++) p[i] = v + (double)(i % 7);
  return p;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: roi_kernels KERNEL N REPS\n");
    return 2;
  }
  const char *k = argv[1];
  long n = atol(argv[2]), reps = atol(argv[3]);
  double t = 0;
  if (!strcmp(k, "copy") || !strcmp(k, "scale") || !strcmp(k, "add") || !strcmp(k, "triad")) {
    double *a = vec(n, 1), *b = vec(n, 2), *c = vec(n, 3);
    for (long r = 0; r < reps; r++) {
      if (k[0] == 'c') {
        PROFCC_ROI_BEGIN("copy");
        copy(c, a, n);
        PROFCC_ROI_END("copy");
      } else if (k[0] == 's') {
        PROFCC_ROI_BEGIN("scale");
        scale(b, c, 3.0, n);
        PROFCC_ROI_END("scale");
      } else if (k[0] == 'a') {
        PROFCC_ROI_BEGIN("add");
        add(c, a, b, n);
        PROFCC_ROI_END("add");
      } else {
        PROFCC_ROI_BEGIN("triad");
        triad(a, b, c, 0.5, n);
        PROFCC_ROI_END("triad");
      }
    }
    t = a[n / 2] + b[n / 3] + c[n - 1];
  } else if (!strcmp(k, "dot") || !strcmp(k, "daxpy")) {
    double *a = vec(n, 1), *b = vec(n, 2);
    for (long r = 0; r < reps; r++) {
      if (k[1] == 'o') {
        PROFCC_ROI_BEGIN("dot");
        t += dot(a, b, n);
        PROFCC_ROI_END("dot");
      } else {
        PROFCC_ROI_BEGIN("daxpy");
        daxpy(b, a, 1e-9, n);
        PROFCC_ROI_END("daxpy");
      }
    }
    t += b[n - 1];
  } else if (!strcmp(k, "spmv")) {
    /* n rows, 8 entries each, columns spread over the vector. */
    int *rp = malloc((n + 1) * sizeof *rp), *ci = malloc(8 * n * sizeof *ci);
    double *v = vec(8 * n, 1), *in = vec(n, 2), *out = vec(n, 0);
    for (long i = 0; i <= n; i++) rp[i] = (int)(8 * i);
    for (long j = 0; j < 8 * n; j++) ci[j] = (int)((j * 2654435761u) % (unsigned long)n);
    for (long r = 0; r < reps; r++) {
      PROFCC_ROI_BEGIN("spmv");
      spmv(out, rp, ci, v, in, n);
      PROFCC_ROI_END("spmv");
    }
    t = out[n / 2];
  } else if (!strcmp(k, "transpose")) {
    double *x = vec(n * n, 1), *y = vec(n * n, 0);
    for (long r = 0; r < reps; r++) {
      PROFCC_ROI_BEGIN("transpose");
      transpose(y, x, n);
      PROFCC_ROI_END("transpose");
    }
    t = y[n + 1];
  } else if (!strcmp(k, "memcpy")) {
    double *a = vec(n, 1), *b = vec(n, 0);
    for (long r = 0; r < reps; r++) {
      PROFCC_ROI_BEGIN("memcpy");
      memcpy(b, a, n * sizeof *a);
      PROFCC_ROI_END("memcpy");
      a[r % n] += 1;
    }
    t = b[n / 2];
  } else if (!strcmp(k, "chase")) {
    /* A ring through n nodes in a random order (an LCG's permutation). */
    struct node *ring = malloc(n * sizeof *ring);
    long *order = malloc(n * sizeof *order);
    for (long i = 0; i < n; i++) order[i] = i;
    unsigned long s = 88172645463325252ul;
    for (long i = n - 1; i > 0; i--) {
      s = s * 6364136223846793005ul + 1442695040888963407ul;
      long j = (long)((s >> 33) % (unsigned long)(i + 1));
      long tmp = order[i];
      order[i] = order[j], order[j] = tmp;
    }
    for (long i = 0; i < n; i++) ring[order[i]].next = &ring[order[(i + 1) % n]];
    for (long r = 0; r < reps; r++) {
      const struct node *start = &ring[order[r % n]];
      PROFCC_ROI_BEGIN("chase");
      t += (double)chase(start, n);
      PROFCC_ROI_END("chase");
    }
  } else {
    fprintf(stderr, "roi_kernels: unknown kernel %s\n", k);
    return 2;
  }
  printf("%s %.6g\n", k, t);
  return 0;
}
