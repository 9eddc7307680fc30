/* Thread churn (issue 46): N threads (argv[1], default 100,000) created and joined one after
 * another, each adding its index to a global; prints the sum. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long counter;

static void *work(void *a) {
    counter += (long)a;
    return 0;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, 0, work, (void *)i)) return 1;
        pthread_join(t, 0);
    }
    printf("%ld\n", counter);
    return 0;
}
