/* Several host threads issuing OpenACC constructs at once: nothing may be lost. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int iterations = 2000;

static void *worker(void *arg) {
    double *x = arg;
    for (int it = 0; it < iterations; it++) {
#pragma acc parallel loop copy(x[0:64])
        for (int i = 0; i < 64; i++) x[i] += 1.0;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2) iterations = atoi(argv[2]);
    pthread_t t[64];
    double *data = calloc((size_t)nthreads * 64, sizeof(double));
    for (int i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, worker, data + i * 64);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    printf("%g\n", data[0]);
    return 0;
}
