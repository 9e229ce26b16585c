/* Several host threads issuing OpenACC constructs at once: nothing may be lost. Every thread
   starts after all were created and ends after all recorded, so that all are recording threads
   at the same time. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int iterations = 2000;
static pthread_barrier_t all_there;

static void *worker(void *arg) {
    double *x = arg;
    pthread_barrier_wait(&all_there);
    for (int it = 0; it < iterations; it++) {
#pragma acc parallel loop copy(x[0:64])
        for (int i = 0; i < 64; i++) x[i] += 1.0;
    }
    pthread_barrier_wait(&all_there);
    return NULL;
}

int main(int argc, char **argv) {
    int nthreads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2) iterations = atoi(argv[2]);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    double *data = calloc((size_t)nthreads * 64, sizeof(double));
    pthread_barrier_init(&all_there, NULL, (unsigned)nthreads);
    for (int i = 0; i < nthreads; i++) pthread_create(&t[i], NULL, worker, data + i * 64);
    for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
    printf("%g\n", data[0]);
    return 0;
}
