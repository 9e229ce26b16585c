/* The allocation hooks under load, for tests/tests/heap_names.rs.
 *   heap_stress threads   several threads malloc/free blocks of mixed sizes (some above the
 *                         recording threshold) and check their contents; then calloc, realloc,
 *                         posix_memalign, aligned_alloc, memalign results are checked. Prints
 *                         "ok" and transfers one heap block.
 *   heap_stress overflow  transfers a block, then allocates and frees big blocks far faster
 *                         than the collector drains them (the queue overflows), then transfers
 *                         another block ("after"), which must not be named.
 */
#include <malloc.h>
#include <openacc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(2); } while (0)

static const size_t sizes[] = {16, 1000, 70000, 200000, 48, 131072};

static void *worker(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < 4000; i++) {
        size_t n = sizes[(seed + i) % 6];
        unsigned char *p = malloc(n);
        if (!p) FAIL("malloc failed");
        unsigned char v = (unsigned char)(seed + i);
        memset(p, v, n);
        if (p[0] != v || p[n - 1] != v) FAIL("contents");
        if (i % 3 == 0) {
            p = realloc(p, n * 2);
            if (!p || p[n - 1] != v) FAIL("realloc lost contents");
        }
        free(p);
    }
    return NULL;
}

static void check_allocators(void) {
    size_t n = 100000;
    unsigned char *z = calloc(n, 1);
    if (!z) FAIL("calloc");
    for (size_t i = 0; i < n; i++)
        if (z[i]) FAIL("calloc not zeroed");
    memset(z, 7, n);
    z = realloc(z, 3 * n);
    if (!z || z[0] != 7 || z[n - 1] != 7) FAIL("realloc grow");
    z = realloc(z, 10);
    if (!z || z[9] != 7) FAIL("realloc shrink");
    free(z);
    void *p = NULL;
    if (posix_memalign(&p, 4096, n) != 0 || ((uintptr_t)p & 4095)) FAIL("posix_memalign");
    memset(p, 1, n);
    free(p);
    if (posix_memalign(&p, 3, n) != 22 /* EINVAL */) FAIL("posix_memalign accepted alignment 3");
    void *q = aligned_alloc(65536, 2 * 65536);
    if (!q || ((uintptr_t)q & 65535)) FAIL("aligned_alloc");
    memset(q, 2, 2 * 65536);
    free(q);
    void *m = memalign(256, n);
    if (!m || ((uintptr_t)m & 255)) FAIL("memalign");
    free(m);
    volatile size_t huge = (size_t)-1, big = (size_t)1 << 40; /* volatile: not a compile-time error */
    if (malloc(huge) != NULL) FAIL("malloc(SIZE_MAX) succeeded");
    if (calloc(big, big) != NULL) FAIL("calloc overflow succeeded");
    free(NULL);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "threads";
    size_t bytes = 1 << 17;
    double *before = malloc(bytes);
    if (!before) FAIL("malloc");
    memset(before, 0, bytes);
    acc_copyin(before, bytes); /* starts the tool (and its collector) */
    if (!strcmp(mode, "threads")) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i * 7 + 1));
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], NULL);
        check_allocators();
    } else {
        /* Far more records than the queue holds, faster than a 200 ms sweep drains them. */
        for (int i = 0; i < 400000; i++) {
            void *p = malloc(70000);
            if (!p) FAIL("malloc");
            free(p);
        }
    }
    double *after = malloc(bytes); /* SITE:after */
    if (!after) FAIL("malloc");
    memset(after, 0, bytes);
    acc_copyin(after, bytes);
    printf("after %#lx\n", (unsigned long)(uintptr_t)after);
    acc_copyout(after, bytes);
    acc_copyout(before, bytes);
    free(after);
    free(before);
    puts("ok");
    return 0;
}
