/* Phoenix histogram's shape: each thread counts the bytes of its part of an image into its own
 * three 256-bin histograms (red, green, blue). Here all threads' histograms are one calloc'ed
 * block, thread after thread, so one thread's last blue bins and the next thread's first red
 * bins share a cache line. Like a real photograph, the image has many saturated pixels (0 and
 * 255): those edge bins are the busiest. At -O0 every increment is a load and a store. With
 * -DPADDED (the padded twin) each thread's histograms start on a line of their own, a line of
 * padding after them. Expected finding: false sharing on the histograms' block. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define THREADS 2
#ifndef PIXELS
#define PIXELS (1L << 24)
#endif

struct arg {
    const unsigned char *data;
    long len;
    int *red, *green, *blue;
};

#ifdef PADDED
#define STRIDE (3 * 256 + 16) /* ints: 16 of padding, one line */
#else
#define STRIDE (3 * 256)
#endif

static int *all_bins(void) {
#ifdef PADDED
    int *p = aligned_alloc(64, THREADS * STRIDE * sizeof(int));
    for (long i = 0; i < THREADS * STRIDE; i++)
        p[i] = 0;
    return p;
#else
    return calloc(THREADS * STRIDE, sizeof(int));
#endif
}

static void *count(void *v) {
    struct arg *a = v;
    for (long i = 0; i + 2 < a->len; i += 3) {
        a->red[a->data[i]]++;
        a->green[a->data[i + 1]]++;
        a->blue[a->data[i + 2]]++;
    }
    return 0;
}

int main(void) {
    long n = PIXELS * 3;
    unsigned char *img = malloc(n);
    unsigned x = 12345;
    for (long i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        unsigned r = x >> 16;
        /* Two pixels in five saturated (0 or 255), the rest spread. */
        img[i] = (r % 5 == 0) ? 0 : (r % 5 == 1) ? 255 : (unsigned char)(r >> 3);
    }
    struct arg args[THREADS];
    int *bins = all_bins();
    for (int t = 0; t < THREADS; t++) {
        args[t].data = img + t * (n / THREADS);
        args[t].len = n / THREADS;
        args[t].red = bins + t * STRIDE;
        args[t].green = args[t].red + 256;
        args[t].blue = args[t].green + 256;
    }
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], 0, count, &args[t]);
    long sum = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], 0);
        for (int b = 0; b < 256; b++)
            sum += (long)b * (args[t].red[b] + args[t].green[b] + args[t].blue[b]);
    }
    printf("%ld\n", sum);
    return 0;
}
