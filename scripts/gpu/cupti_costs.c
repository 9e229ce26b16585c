/* What each way of tying CUPTI's kernel records to the host costs per launch, in one program.
 *
 *   cupti_costs MODE [launches] [reps]
 *
 * MODE: none      no CUPTI
 *       activity  kernel (concurrent) + memcpy activity records only (a bare collector)
 *       callback  activity + a driver-API callback on cuLaunchKernel that notes the call
 *                 (clock read + a mutex-guarded insert), the way libaccprof once tied kernels to
 *                 their launches
 *       extcorr   activity + external correlation records, one id pushed and popped around
 *                 each launch (what an OpenACC tool can do at enqueue_launch start/end)
 *       extcorr-driver  extcorr + driver API activity records
 * Prints the median host ns per launch (launches queued, then one synchronize, as an
 * application's async launches are) and, at exit, how many kernel records came, how many had
 * an external id, and how many of those ids were delivered after their kernel record.
 *
 * Built on the development machine against CUPTI's and CUDA's headers, both libraries opened
 * with dlopen: gcc -O2 -I<cupti include> -I<cuda include> cupti_costs.c -o cupti_costs -ldl -lpthread */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_SIZE (8u << 20)
#define MAXCORR (1u << 22)

static const char *PTX = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry costs_empty()\n{\n ret;\n}\n";

#define F(name) static __typeof__(name) *p_##name
F(cuInit); F(cuDeviceGet); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent); F(cuModuleLoadData);
F(cuModuleGetFunction); F(cuStreamCreate); F(cuLaunchKernel); F(cuStreamSynchronize);
F(cuptiActivityRegisterCallbacks); F(cuptiActivityEnable); F(cuptiActivityFlushAll);
F(cuptiActivityGetNextRecord); F(cuptiSubscribe); F(cuptiEnableCallback);
F(cuptiActivityPushExternalCorrelationId); F(cuptiActivityPopExternalCorrelationId);

static unsigned char *ext_seen; /* per correlation id: 1 = its external record came */
static unsigned char *kern_seen;
static unsigned long long kernels, with_ext, ext_after_kernel, ext_records, driver_records;
static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long notes[1024];

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_SIZE);
    *size = *buffer ? BUF_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    CUpti_Activity *rec = NULL;
    (void)ctx; (void)stream; (void)size;
    while (p_cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            CUpti_ActivityKernel9 *k = (CUpti_ActivityKernel9 *)rec;
            kernels++;
            if (k->correlationId < MAXCORR) {
                kern_seen[k->correlationId] = 1;
                if (ext_seen[k->correlationId]) with_ext++;
            }
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            CUpti_ActivityExternalCorrelation *e = (CUpti_ActivityExternalCorrelation *)rec;
            ext_records++;
            if (e->correlationId < MAXCORR) {
                ext_seen[e->correlationId] = 1;
                if (kern_seen[e->correlationId]) { ext_after_kernel++; with_ext++; }
            }
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
            driver_records++;
        }
    }
    free(buffer);
}

static void CUPTIAPI on_call(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
    const CUpti_CallbackData *cb = data;
    (void)u; (void)d; (void)id;
    if (cb->callbackSite != CUPTI_API_ENTER) return;
    uint64_t t = now_ns();
    pthread_mutex_lock(&note_lock);
    notes[cb->correlationId & 1023] = t;
    pthread_mutex_unlock(&note_lock);
}

#define LOAD(lib, name) do { p_##name = dlsym(lib, #name); if (!p_##name) { fprintf(stderr, "missing %s\n", #name); return 1; } } while (0)
#define CK(x) do { int r_ = (x); if (r_) { fprintf(stderr, "%s failed: %d\n", #x, r_); return 1; } } while (0)

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "none";
    int n = argc > 2 ? atoi(argv[2]) : 20000, reps = argc > 3 ? atoi(argv[3]) : 7;
    int ext = !strncmp(mode, "extcorr", 7);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cu) { fprintf(stderr, "no libcuda\n"); return 1; }
    LOAD(cu, cuInit); LOAD(cu, cuDeviceGet); LOAD(cu, cuDevicePrimaryCtxRetain); LOAD(cu, cuCtxSetCurrent);
    LOAD(cu, cuModuleLoadData); LOAD(cu, cuModuleGetFunction); LOAD(cu, cuStreamCreate);
    LOAD(cu, cuStreamSynchronize);
    p_cuLaunchKernel = dlsym(cu, "cuLaunchKernel");
    ext_seen = calloc(MAXCORR, 1);
    kern_seen = calloc(MAXCORR, 1);
    if (strcmp(mode, "none")) {
        void *cp = dlopen("libcupti.so", RTLD_NOW);
        if (!cp) cp = dlopen("libcupti.so.13", RTLD_NOW);
        if (!cp) cp = dlopen("libcupti.so.12", RTLD_NOW);
        if (!cp) { fprintf(stderr, "no libcupti\n"); return 1; }
        LOAD(cp, cuptiActivityRegisterCallbacks); LOAD(cp, cuptiActivityEnable); LOAD(cp, cuptiActivityFlushAll);
        LOAD(cp, cuptiActivityGetNextRecord); LOAD(cp, cuptiSubscribe); LOAD(cp, cuptiEnableCallback);
        LOAD(cp, cuptiActivityPushExternalCorrelationId); LOAD(cp, cuptiActivityPopExternalCorrelationId);
        CK(p_cuptiActivityRegisterCallbacks(requested, completed));
        CK(p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        CK(p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
        if (ext) CK(p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
        if (!strcmp(mode, "extcorr-driver")) CK(p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
        if (!strcmp(mode, "callback")) {
            CUpti_SubscriberHandle sub;
            CK(p_cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_call, NULL));
            CK(p_cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
        }
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CK(p_cuInit(0)); CK(p_cuDeviceGet(&dev, 0)); CK(p_cuDevicePrimaryCtxRetain(&ctx, dev)); CK(p_cuCtxSetCurrent(ctx));
    CK(p_cuModuleLoadData(&mod, PTX)); CK(p_cuModuleGetFunction(&f, mod, "costs_empty")); CK(p_cuStreamCreate(&s, 1));
    double *v = calloc(reps, sizeof *v);
    uint64_t id = 1;
    for (int r = -1; r < reps; r++) {
        uint64_t t = now_ns();
        for (int i = 0; i < n; i++) {
            if (ext) p_cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_OPENACC, id++);
            p_cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL);
            if (ext) p_cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_OPENACC, NULL);
        }
        p_cuStreamSynchronize(s);
        if (r >= 0) v[r] = (double)(now_ns() - t) / n;
    }
    qsort(v, reps, sizeof *v, cmp);
    if (strcmp(mode, "none")) p_cuptiActivityFlushAll(1);
    printf("%-15s launch %.0f ns (median of %d x %d; min %.0f) kernels %llu with_ext %llu ext_after_kernel %llu ext_records %llu driver_records %llu\n",
           mode, v[reps / 2], reps, n, v[0], kernels, with_ext, ext_after_kernel, ext_records, driver_records);
    return 0;
}
