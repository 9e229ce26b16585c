/* ns per malloc+free pair of a small block, for docs/performance/libaccprof.md: run it with
 * and without LD_PRELOAD=libaccprof.so (the hooks), same machine, same run of the script.
 *   heap_bench [pairs] [size]      prints "<size> bytes: <ns> ns per malloc+free pair" */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv) {
    long pairs = argc > 1 ? atol(argv[1]) : 20000000;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 64;
    /* A live recorded-size block, so that free() takes the filter probe path too. */
    void *keep = malloc(1 << 20);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < pairs; i++) {
            void *volatile p = malloc(size);
            free(p);
        }
        double per = (now_ns() - t0) / pairs;
        if (per < best)
            best = per;
    }
    printf("%zu bytes: %.2f ns per malloc+free pair (best of 5)\n", size, best);
    free(keep);
    return 0;
}
