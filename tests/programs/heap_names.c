/* Heap blocks from every allocator, transferred with the OpenACC runtime API (which names no
 * variable), for tests/tests/heap_names.rs. Lines marked SITE:<tag> are the allocation sites
 * the trace must name; the test reads their numbers from this file. Prints one line per
 * transfer: "<tag> <host address>". */
#include <openacc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 96 KiB: above the 64 KiB default threshold, below glibc's mmap threshold, so that a block
 * freed and allocated again gets the same address. */
#define N 12288
#define BYTES (N * sizeof(double))

double global_arr[N];

static void fill(double *p, double v) {
    for (int i = 0; i < N; i++)
        p[i] = v + i;
}

static void show(const char *tag, const void *p) {
    printf("%s %#lx\n", tag, (unsigned long)(uintptr_t)p);
}

int main(void) {
    double *a = malloc(BYTES); /* SITE:malloc */
    double *b = calloc(N, sizeof(double)); /* SITE:calloc */
    void *cv = NULL;
    if (posix_memalign(&cv, 4096, BYTES) != 0) /* SITE:posix_memalign */
        return 1;
    double *c = cv;
    double *d = malloc(100 * sizeof(double));
    d = realloc(d, BYTES); /* SITE:realloc */
    /* A block freed and the next one allocated at its address (before the runtime frees any
     * block of its own, which glibc could hand out instead): the transfer must be named after
     * the second allocation. */
    double *f = malloc(BYTES); /* SITE:freed */
    if (!f)
        return 1;
    fill(f, 6);
    uintptr_t old_f = (uintptr_t)f;
    free(f);
    double *e = malloc(BYTES); /* SITE:reuse */
    if (!e)
        return 1;
    fill(e, 7);
    if (!a || !b || !d)
        return 1;
    fill(a, 1);
    fill(c, 3);
    fill(d, 4);
    fill(global_arr, 5);

    acc_copyin(a, BYTES);
    show("malloc", a);
    acc_copyin(b, BYTES);
    show("calloc", b);
    acc_copyin(c, BYTES);
    show("posix_memalign", c);
    acc_copyin(d, BYTES);
    show("realloc", d);
    acc_copyin(global_arr, BYTES);
    show("global", global_arr);
    /* Part of a: 4096 doubles from element 1024. */
    acc_update_device(a + 1024, 4096 * sizeof(double));
    show("partial", a + 1024);

    acc_copyout(a, BYTES);
    acc_copyout(b, BYTES);
    acc_copyout(c, BYTES);
    acc_copyout(d, BYTES);
    acc_copyout(global_arr, BYTES);

    acc_copyin(e, BYTES);
    show("reuse", e);
    acc_copyout(e, BYTES);
    printf("reused %d\n", (uintptr_t)e == old_f);

    free(a);

    free(b);
    free(c);
    free(d);
    free(e);
    return 0;
}
