/* Passive false sharing through the allocator (the shape of mimalloc-bench's cache-scratch,
 * after Hoard's, written here): main allocates one small object per thread in a row (they may
 * share cache lines: under glibc 2.36 two threads' 8-byte blocks lie at line offsets 32 and 0,
 * on two lines) and hands each thread one; the thread frees it, then ROUNDS times
 * allocates an object of the same size, writes it REPS times and frees it. An allocator that
 * gives a thread back the block main allocated for it keeps the threads' objects on shared
 * lines. T threads (argv[1], default 2); prints the sum of what was written. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef ROUNDS
#define ROUNDS 2000000
#endif
#ifndef REPS
#define REPS 50
#endif
#define SIZE 8
#define MAX_T 64

static void *handed[MAX_T];
static long sums[MAX_T];

static void *worker(void *a) {
    long me = (long)a;
    free(handed[me]);
    long sum = 0;
    for (long r = 0; r < ROUNDS; r++) {
        volatile char *p = malloc(SIZE);
        for (int k = 0; k < REPS; k++) p[k % SIZE] = (char)(k + r);
        sum += p[0];
        free((void *)p);
    }
    sums[me] = sum;
    return 0;
}

int main(int argc, char **argv) {
    long t = argc > 1 ? atol(argv[1]) : 2;
    if (t < 1 || t > MAX_T) return 2;
    pthread_t th[MAX_T];
    for (long i = 0; i < t; i++) handed[i] = malloc(SIZE);
    for (long i = 0; i < t; i++)
        if (pthread_create(&th[i], 0, worker, (void *)i)) return 1;
    long total = 0;
    for (long i = 0; i < t; i++) {
        pthread_join(th[i], 0);
        total += sums[i];
    }
    printf("%ld\n", total);
    return 0;
}
