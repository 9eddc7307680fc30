/* Phoenix histogram's shape: each thread counts the bytes of its part of an image into its own
 * three 256-bin histograms (red, green, blue), each calloc'ed on its own, one thread after
 * another, so that one thread's blue bins and the next thread's red bins are neighbours in the
 * heap. Like a real photograph, the image has many saturated pixels (0 and 255): the edge bins
 * are the busiest, and they share cache lines with the neighbouring thread's. At -O0 every
 * increment is a load and a store. With -DPADDED (the padded twin) each histogram is a 64-byte
 * aligned block with a line of padding after it. Expected finding: false sharing on the
 * histograms' allocation site. */
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

static int *bins(void) {
#ifdef PADDED
    int *p = aligned_alloc(64, 256 * sizeof(int) + 64);
    for (int i = 0; i < 256; i++)
        p[i] = 0;
    return p;
#else
    return calloc(256, sizeof(int));
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
    for (int t = 0; t < THREADS; t++) {
        args[t].data = img + t * (n / THREADS);
        args[t].len = n / THREADS;
        args[t].red = bins();
        args[t].green = bins();
        args[t].blue = bins();
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
