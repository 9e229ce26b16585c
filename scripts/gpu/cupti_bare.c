/* A bare CUPTI activity collector, the baseline accprof's device recording is held against.
 *
 * LD_PRELOAD it into any CUDA program: it enables kernel (concurrent) and memcpy activity
 * records, as a minimal tracer would, counts them at exit and writes the totals:
 *
 *   CUPTI_BARE_OUT=totals.txt LD_PRELOAD=./cupti_bare.so ./app
 *
 * One line per record class: "kernel <count> <total device ns>", "htod <count> <bytes> <ns>",
 * "dtoh <count> <bytes> <ns>", "other_copy <count> <bytes> <ns>", plus "dropped <n>".
 * Set CUPTI_BARE_MEMSET=1 to also count memsets ("memset <count> <bytes> <ns>").
 *
 * It is compiled against CUPTI's own headers (not accprof's reading of them) and opens
 * libcupti with dlopen, so that it runs with whichever CUPTI the machine has:
 *   gcc -O2 -shared -fPIC -I<cupti include> -I<cuda include> cupti_bare.c -o cupti_bare.so -ldl */
#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_SIZE (8u << 20)

static struct {
    unsigned long long n, bytes, ns;
} kernels, htod, dtoh, other, memsets;
static size_t dropped;
static int started;

static __typeof__(cuptiActivityRegisterCallbacks) *p_register;
static __typeof__(cuptiActivityEnable) *p_enable;
static __typeof__(cuptiActivityFlushAll) *p_flush;
static __typeof__(cuptiActivityGetNextRecord) *p_next;
static __typeof__(cuptiActivityGetNumDroppedRecords) *p_dropped;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_SIZE);
    *size = *buffer ? BUF_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    CUpti_Activity *rec = NULL;
    (void)size;
    while (p_next(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            CUpti_ActivityKernel9 *k = (CUpti_ActivityKernel9 *)rec;
            kernels.n++;
            kernels.ns += k->end - k->start;
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
            __typeof__(htod) *t = m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD ? &htod
                                : m->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ? &dtoh : &other;
            t->n++;
            t->bytes += m->bytes;
            t->ns += m->end - m->start;
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
            memsets.n++;
            memsets.bytes += m->bytes;
            memsets.ns += m->end - m->start;
        }
    }
    size_t d = 0;
    if (p_dropped(ctx, stream, &d) == CUPTI_SUCCESS)
        dropped += d;
    free(buffer);
}

__attribute__((constructor)) static void start(void)
{
    const char *names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so", NULL};
    void *h = NULL;
    for (int i = 0; names[i] && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cupti_bare: no libcupti\n");
        return;
    }
    p_register = dlsym(h, "cuptiActivityRegisterCallbacks");
    p_enable = dlsym(h, "cuptiActivityEnable");
    p_flush = dlsym(h, "cuptiActivityFlushAll");
    p_next = dlsym(h, "cuptiActivityGetNextRecord");
    p_dropped = dlsym(h, "cuptiActivityGetNumDroppedRecords");
    if (!p_register || !p_enable || !p_flush || !p_next || !p_dropped || p_register(requested, completed) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_bare: cannot start CUPTI\n");
        return;
    }
    p_enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    p_enable(CUPTI_ACTIVITY_KIND_MEMCPY);
    const char *ms = getenv("CUPTI_BARE_MEMSET");
    if (ms && *ms == '1')
        p_enable(CUPTI_ACTIVITY_KIND_MEMSET);
    started = 1;
}

__attribute__((destructor)) static void stop(void)
{
    if (!started)
        return;
    p_flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const char *path = getenv("CUPTI_BARE_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "kernel %llu 0 %llu\n", kernels.n, kernels.ns);
    fprintf(f, "htod %llu %llu %llu\n", htod.n, htod.bytes, htod.ns);
    fprintf(f, "dtoh %llu %llu %llu\n", dtoh.n, dtoh.bytes, dtoh.ns);
    fprintf(f, "other_copy %llu %llu %llu\n", other.n, other.bytes, other.ns);
    fprintf(f, "memset %llu %llu %llu\n", memsets.n, memsets.bytes, memsets.ns);
    fprintf(f, "dropped %zu 0 0\n", dropped);
    fclose(f);
}
