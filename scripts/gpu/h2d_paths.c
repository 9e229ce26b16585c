/* Which way of uploading ordinary pageable host memory (malloc'd, touched) to device memory
 * is fastest, in one program. The goal is a path that reaches 40 GB/s for 64 MiB copies.
 *
 *   h2d_paths [MiB=64] [reps=7] [cold=0]
 *
 * Variants, one line each (median and best GB/s over reps, after one untimed warm-up rep):
 *   pinned               cuMemcpyHtoD from cuMemHostAlloc'd memory (the ceiling)
 *   pageable_raw         cuMemcpyHtoD from the malloc'd source
 *   pinned_chunked       the pinned source in chunks of C bytes round-robin on S streams, one
 *                        issuing thread: the DMA side of staging alone (H2D_ONLY_PINNED=1 stops
 *                        after these)
 *   register_whole       cuMemHostRegister + cuMemcpyHtoD + cuMemHostUnregister of the whole source
 *   register_pipelined   T threads register P pieces in turn and copy each on their own stream;
 *                        also prints the time in cuMemHostRegister summed over threads against the
 *                        wall time from the first register to the last: if the calls run in
 *                        parallel the wall ns/page falls with T while the summed one stays put, if
 *                        the driver serializes them the summed one grows with T instead
 *   staged_cached        T copier threads fill S pinned slots of C bytes with regular stores
 *                        (slots stay in the CPU cache); the main thread alone issues the copies
 *   staged_nt_current    the shim's earlier staging (before its 4 MiB DMAs copied in pieces): T
 *                        threads copy with non-temporal stores into S pinned slots and each
 *                        issues its own copies (chunks 64 KiB doubling to C), the reference the
 *                        other variants are held against
 * A rep is timed from the start of the upload until the data is on the device (after the
 * synchronize it needs). Before each rep a few bytes of every MiB of the source are rewritten, so
 * nothing can be cached by content; after the reps the device buffer is copied back and compared
 * with the source (ok / FAIL). cold=1 also flushes the source from the CPU caches before each rep
 * (outside the timing), so the source comes from DRAM whatever the L3 size.
 *
 * Needs only libcuda.so.1 at run time (opened with dlopen). Built on the development machine
 * against CUDA's headers: gcc -O2 -march=x86-64-v2 -I<cuda include> h2d_paths.c -o h2d_paths -ldl -lpthread */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <emmintrin.h>
#include <glob.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define POOL 16         /* worker threads, created once */
#define MAXS 64         /* streams and events, created once (slots, or one per thread) */
#define MAXP 256        /* pieces of register_pipelined */
#define NM 6            /* numbers a rep reports; m[0] is the time until the data is on the device */
#define SPIN_NS 2000000 /* an idle worker spins this long before it sleeps */
#define POLL_NS 2000    /* pause between two cuEventQuery calls of a waiting copier */

#define F(name) static __typeof__(name) *p_##name
F(cuInit); F(cuDriverGetVersion); F(cuDeviceGet); F(cuDeviceGetName); F(cuDevicePrimaryCtxRetain);
F(cuCtxSetCurrent); F(cuCtxSynchronize); F(cuGetErrorName); F(cuMemAlloc); F(cuMemsetD8);
F(cuMemHostAlloc); F(cuMemcpyHtoD); F(cuMemcpyDtoH); F(cuMemcpyHtoDAsync); F(cuMemHostRegister);
F(cuMemHostUnregister); F(cuStreamCreate); F(cuStreamSynchronize); F(cuEventCreate);
F(cuEventRecord); F(cuEventQuery); F(cuEventSynchronize);

/* STR expands cuda.h's renames first, so the symbol looked up is the one the header declares
 * (cuMemcpyHtoD -> "cuMemcpyHtoD_v2", not the legacy 32-bit "cuMemcpyHtoD"). */
#define STR_(x) #x
#define STR(x) STR_(x)
#define LOAD(lib, name) do { p_##name = dlsym(lib, STR(name)); if (!p_##name) die("libcuda.so.1 has no %s", STR(name)); } while (0)
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) cu_fail(#x, r_); } while (0)

static void die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("h2d_paths: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    _exit(1); /* not exit(): other threads may be inside the driver */
}

static void cu_fail(const char *call, CUresult r)
{
    const char *name = NULL;
    if (p_cuGetErrorName) p_cuGetErrorName(r, &name);
    die("%s failed: %d (%s)", call, (int)r, name ? name : "?");
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static void pause_ns(uint64_t ns)
{
    uint64_t t = now_ns();
    while (now_ns() - t < ns) _mm_pause();
}

/* ---- shared state ---- */

static CUcontext ctx;
static CUdeviceptr dptr;        /* one device buffer of the size, reused */
static unsigned char *src;      /* pageable, page aligned, touched */
static unsigned char *psrc;     /* pinned copy of the source, for the ceiling */
static unsigned char *check;    /* pinned, for verification */
static unsigned char *slots;    /* pinned staging slots */
static size_t bytes, slot_bytes;
static CUstream streams[MAXS];
static CUevent events[MAXS];
static int nreps = 7, cold;

static double secs(uint64_t ns) { return ns * 1e-9; }
static double gbs(double s) { return s > 0 ? bytes / s / 1e9 : 0; }

/* ---- copies with regular and with non-temporal stores (SSE2, 64 bytes a step) ---- */

/* An explicit loop rather than memcpy: glibc switches to non-temporal stores above a size that
 * depends on the cache sizes, and these stores must stay regular so the slot stays cached. */
static void copy_cached(void *dst, const void *from, size_t n)
{
    __m128i *d = dst;
    const __m128i *s = from;
    for (size_t i = 0; i < n / 64; i++, d += 4, s += 4) {
        __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
        __m128i c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
        _mm_store_si128(d, a); _mm_store_si128(d + 1, b);
        _mm_store_si128(d + 2, c); _mm_store_si128(d + 3, e);
    }
    memcpy(d, s, n % 64);
}

static void copy_nt(void *dst, const void *from, size_t n)
{
    __m128i *d = dst;
    const __m128i *s = from;
    for (size_t i = 0; i < n / 64; i++, d += 4, s += 4) {
        __m128i a = _mm_loadu_si128(s), b = _mm_loadu_si128(s + 1);
        __m128i c = _mm_loadu_si128(s + 2), e = _mm_loadu_si128(s + 3);
        _mm_stream_si128(d, a); _mm_stream_si128(d + 1, b);
        _mm_stream_si128(d + 2, c); _mm_stream_si128(d + 3, e);
    }
    memcpy(d, s, n % 64);
    _mm_sfence();
}

/* ---- a tiny thread pool: run fn(tid, arg) on workers 0..n-1, then wait for all ---- */

struct worker {
    _Alignas(64) atomic_int go;
    int id;
    pthread_t th;
    pthread_mutex_t m;
    pthread_cond_t c;
};
static struct worker workers[POOL];
static void (*pool_fn)(int tid, void *arg);
static void *pool_arg;
static int pool_n;
static _Alignas(64) atomic_int pool_done;

static void *worker_main(void *p)
{
    struct worker *w = p;
    CK(p_cuCtxSetCurrent(ctx));
    for (;;) {
        uint64_t t = now_ns();
        while (!atomic_load_explicit(&w->go, memory_order_acquire) && now_ns() - t < SPIN_NS) _mm_pause();
        if (!atomic_load_explicit(&w->go, memory_order_acquire)) {
            pthread_mutex_lock(&w->m);
            while (!atomic_load_explicit(&w->go, memory_order_acquire)) pthread_cond_wait(&w->c, &w->m);
            pthread_mutex_unlock(&w->m);
        }
        atomic_store_explicit(&w->go, 0, memory_order_relaxed);
        pool_fn(w->id, pool_arg);
        atomic_fetch_add_explicit(&pool_done, 1, memory_order_release);
    }
    return NULL;
}

static void pool_create(void)
{
    for (int i = 0; i < POOL; i++) {
        struct worker *w = &workers[i];
        w->id = i;
        pthread_mutex_init(&w->m, NULL);
        pthread_cond_init(&w->c, NULL);
        if (pthread_create(&w->th, NULL, worker_main, w)) die("pthread_create failed");
    }
}

static void pool_start(int n, void (*fn)(int, void *), void *arg)
{
    if (n < 1 || n > POOL) die("%d threads asked, the pool has %d", n, POOL);
    pool_fn = fn;
    pool_arg = arg;
    pool_n = n;
    atomic_store_explicit(&pool_done, 0, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&workers[i].m);
        atomic_store_explicit(&workers[i].go, 1, memory_order_release);
        pthread_cond_signal(&workers[i].c);
        pthread_mutex_unlock(&workers[i].m);
    }
}

static void pool_wait(void)
{
    while (atomic_load_explicit(&pool_done, memory_order_acquire) < pool_n) {
        for (int i = 0; i < 32; i++) _mm_pause();
        sched_yield(); /* the workers may need every CPU */
    }
}

/* ---- source contents, verification, the rep loop ---- */

static void fill(unsigned char *p)
{
    uint64_t x = 0x243F6A8885A308D3ull;
    for (size_t i = 0; i < bytes / 8; i++) {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        ((uint64_t *)p)[i] = x * 0x2545F4914F6CDD1Dull;
    }
}

/* Rewrites 8 bytes at a moving place in every MiB, and the last byte. */
static void perturb(unsigned char *p)
{
    static uint64_t seq;
    seq++;
    for (size_t off = 0; off < bytes; off += MIB) {
        size_t at = off + (seq * 4099 + off / 4096 * 131) % (MIB - 8);
        uint64_t v = seq * 0x9E3779B97F4A7C15ull ^ off;
        memcpy(p + at, &v, 8);
    }
    p[bytes - 1] = (unsigned char)seq;
}

static void evict(const unsigned char *p)
{
    for (size_t off = 0; off < bytes; off += 64) _mm_clflush(p + off);
    _mm_mfence();
}

static int verify(const unsigned char *want)
{
    CK(p_cuCtxSynchronize());
    CK(p_cuMemcpyDtoH(check, dptr, bytes));
    return memcmp(check, want, bytes) == 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*rep_fn)(void *arg, double m[NM]); /* m: seconds */

/* One untimed warm-up rep, then nreps; med and best (smallest) of each of the NM numbers.
 * Returns whether the device holds the source afterwards. */
static int bench(rep_fn fn, void *arg, unsigned char *source, double med[NM], double best[NM])
{
    double *v = calloc((size_t)NM * nreps, sizeof *v);
    if (!v) die("out of memory");
    CK(p_cuMemsetD8(dptr, 0, bytes)); /* so a previous variant's upload cannot pass the check */
    CK(p_cuCtxSynchronize());
    for (int r = -1; r < nreps; r++) {
        double m[NM] = {0};
        perturb(source);
        if (cold) evict(source);
        fn(arg, m);
        if (r >= 0)
            for (int i = 0; i < NM; i++) v[i * nreps + r] = m[i];
    }
    for (int i = 0; i < NM; i++) {
        qsort(v + i * nreps, nreps, sizeof *v, cmp);
        med[i] = v[i * nreps + nreps / 2];
        best[i] = v[i * nreps];
    }
    free(v);
    return verify(source);
}

static void line(const char *name, const char *params, const double med[NM], const double best[NM], int ok,
                 const char *extra)
{
    printf("%-18s %-17s median %6.1f GB/s  best %6.1f GB/s  %-4s %s\n", name, params, gbs(med[0]), gbs(best[0]),
           ok ? "ok" : "FAIL", extra);
    fflush(stdout);
}

/* ---- 1, 2: one synchronous copy ---- */

static void rep_plain(void *arg, double m[NM])
{
    const unsigned char *p = arg;
    uint64_t t0 = now_ns();
    CK(p_cuMemcpyHtoD(dptr, p, bytes));
    CK(p_cuCtxSynchronize()); /* from pageable memory the call may return before the DMA is done */
    m[0] = secs(now_ns() - t0);
}

/* ---- 1b: the pinned source in chunks of C bytes on S streams (what the DMA side of staging
 * can reach at that granularity, with the host copy taken away) ---- */

struct chunked { size_t C; int S; };

static void rep_pinned_chunked(void *arg, double m[NM])
{
    const struct chunked *c = arg;
    uint64_t t0 = now_ns();
    for (size_t off = 0, i = 0; off < bytes; off += c->C, i++) {
        size_t n = bytes - off < c->C ? bytes - off : c->C;
        CK(p_cuMemcpyHtoDAsync(dptr + off, psrc + off, n, streams[i % (size_t)c->S]));
    }
    CK(p_cuCtxSynchronize());
    m[0] = secs(now_ns() - t0);
}

/* ---- 3: register the whole source, copy, unregister ---- */

static void rep_register_whole(void *arg, double m[NM])
{
    (void)arg;
    uint64_t t0 = now_ns();
    CK(p_cuMemHostRegister(src, bytes, 0));
    uint64_t t1 = now_ns();
    CK(p_cuMemcpyHtoD(dptr, src, bytes));
    CK(p_cuCtxSynchronize());
    uint64_t t2 = now_ns();
    CK(p_cuMemHostUnregister(src));
    uint64_t t3 = now_ns();
    m[0] = secs(t2 - t0);
    m[1] = secs(t3 - t0);
    m[2] = secs(t1 - t0);
    m[3] = secs(t2 - t1);
    m[4] = secs(t3 - t2);
}

/* ---- 4: register pieces from several threads, each copying on its own stream ---- */

struct regthr {
    _Alignas(64) uint64_t reg_ns, reg_first, reg_last, done;
    int n;
    int mine[MAXP];
};
struct regpipe {
    int T, P;
    size_t piece;
    _Alignas(64) atomic_int next;
    struct regthr th[POOL];
};

static void regpipe_thread(int t, void *arg)
{
    struct regpipe *r = arg;
    struct regthr *me = &r->th[t];
    me->n = 0;
    me->reg_ns = 0;
    for (;;) {
        int k = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
        if (k >= r->P) break;
        size_t off = k * r->piece, len = k == r->P - 1 ? bytes - off : r->piece;
        uint64_t a = now_ns();
        CK(p_cuMemHostRegister(src + off, len, 0));
        uint64_t b = now_ns();
        if (!me->n) me->reg_first = a;
        me->reg_last = b;
        me->reg_ns += b - a;
        CK(p_cuMemcpyHtoDAsync(dptr + off, src + off, len, streams[t]));
        me->mine[me->n++] = k;
    }
    CK(p_cuStreamSynchronize(streams[t]));
    me->done = now_ns();
    for (int i = 0; i < me->n; i++) CK(p_cuMemHostUnregister(src + me->mine[i] * r->piece));
}

static void rep_regpipe(void *arg, double m[NM])
{
    struct regpipe *r = arg;
    atomic_store_explicit(&r->next, 0, memory_order_relaxed);
    uint64_t t0 = now_ns();
    pool_start(r->T, regpipe_thread, r);
    pool_wait();
    uint64_t t1 = now_ns();
    uint64_t done = t0, first = UINT64_MAX, last = 0, sum = 0;
    for (int t = 0; t < r->T; t++) {
        struct regthr *h = &r->th[t];
        if (h->done > done) done = h->done;
        if (!h->n) continue;
        if (h->reg_first < first) first = h->reg_first;
        if (h->reg_last > last) last = h->reg_last;
        sum += h->reg_ns;
    }
    m[0] = secs(done - t0);
    m[1] = secs(t1 - t0);
    m[2] = secs(sum);
    m[3] = secs(last - first);
}

/* ---- 5: copiers fill cached pinned slots, the main thread alone issues the DMA ---- */

struct flag {
    _Alignas(64) atomic_size_t v;
};
struct staged {
    int T, S, nstreams;
    size_t C, nchunks;
    struct flag ready[MAXS];  /* slot s holds chunk v-1, copied */
    struct flag issued[MAXS]; /* the copy of chunk v-1 from slot s is issued, events[s] recorded after it */
};

static void cached_copier(int t, void *arg)
{
    struct staged *st = arg;
    for (size_t k = t; k < st->nchunks; k += st->T) {
        int s = k % st->S;
        if (k >= (size_t)st->S) {
            size_t prev = k - st->S;
            while (atomic_load_explicit(&st->issued[s].v, memory_order_acquire) < prev + 1) _mm_pause();
            CUresult r;
            while ((r = p_cuEventQuery(events[s])) == CUDA_ERROR_NOT_READY) pause_ns(POLL_NS);
            if (r != CUDA_SUCCESS) cu_fail("p_cuEventQuery(events[s])", r);
        }
        size_t off = k * st->C, len = bytes - off < st->C ? bytes - off : st->C;
        copy_cached(slots + s * st->C, src + off, len);
        atomic_store_explicit(&st->ready[s].v, k + 1, memory_order_release);
    }
}

static void rep_cached(void *arg, double m[NM])
{
    struct staged *st = arg;
    for (int s = 0; s < st->S; s++) {
        atomic_store_explicit(&st->ready[s].v, 0, memory_order_relaxed);
        atomic_store_explicit(&st->issued[s].v, 0, memory_order_relaxed);
    }
    uint64_t t0 = now_ns();
    pool_start(st->T, cached_copier, st);
    for (size_t k = 0; k < st->nchunks; k++) {
        int s = k % st->S;
        CUstream str = streams[k % st->nstreams];
        size_t off = k * st->C, len = bytes - off < st->C ? bytes - off : st->C;
        while (atomic_load_explicit(&st->ready[s].v, memory_order_acquire) < k + 1) _mm_pause();
        CK(p_cuMemcpyHtoDAsync(dptr + off, slots + s * st->C, len, str));
        CK(p_cuEventRecord(events[s], str));
        atomic_store_explicit(&st->issued[s].v, k + 1, memory_order_release);
    }
    for (int i = 0; i < st->nstreams; i++) CK(p_cuStreamSynchronize(streams[i]));
    m[0] = secs(now_ns() - t0);
    pool_wait(); /* the copiers are done already: every chunk was issued */
}

/* ---- 6: the shim's earlier staging, non-temporal stores, each thread issues its own copies ---- */

struct ntstaged {
    int T, S;
    size_t C, nchunks;
    size_t *off, *len;
};

static void nt_thread(int t, void *arg)
{
    struct ntstaged *st = arg;
    for (size_t k = 0; k < st->nchunks; k++) {
        int s = k % st->S;
        if (s % st->T != t) continue;
        if (k >= (size_t)st->S) CK(p_cuEventSynchronize(events[s]));
        unsigned char *slot = slots + s * st->C;
        copy_nt(slot, src + st->off[k], st->len[k]);
        CK(p_cuMemcpyHtoDAsync(dptr + st->off[k], slot, st->len[k], streams[s]));
        CK(p_cuEventRecord(events[s], streams[s]));
    }
    for (int s = t; s < st->S; s += st->T) CK(p_cuStreamSynchronize(streams[s]));
}

static void rep_nt(void *arg, double m[NM])
{
    struct ntstaged *st = arg;
    uint64_t t0 = now_ns();
    pool_start(st->T, nt_thread, st);
    pool_wait();
    m[0] = secs(now_ns() - t0);
}

/* ---- the machine ---- */

static void read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    buf[0] = 0;
    if (f) {
        if (!fgets(buf, (int)n, f)) buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
    if (!buf[0]) snprintf(buf, n, "?");
}

static void print_machine(void)
{
    char model[256] = "?", buf[256];
    int cpus = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(buf, sizeof buf, f)) {
            if (!strncmp(buf, "processor", 9)) cpus++;
            else if (!strncmp(buf, "model name", 10) && model[0] == '?') {
                char *c = strchr(buf, ':');
                if (c) {
                    c += 1 + (c[1] == ' ');
                    snprintf(model, sizeof model, "%s", c);
                    model[strcspn(model, "\n")] = 0;
                }
            }
        }
        fclose(f);
    }
    printf("cpu: %s, %d processors (%ld online)\n", model, cpus, sysconf(_SC_NPROCESSORS_ONLN));
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf);
    printf("transparent_hugepage: %s\n", buf);
    printf("cache (cpu0):");
    glob_t g;
    if (!glob("/sys/devices/system/cpu/cpu0/cache/index*", 0, NULL, &g)) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            char path[512], level[32], type[32], size[32];
            snprintf(path, sizeof path, "%s/level", g.gl_pathv[i]);
            read_line(path, level, sizeof level);
            snprintf(path, sizeof path, "%s/type", g.gl_pathv[i]);
            read_line(path, type, sizeof type);
            snprintf(path, sizeof path, "%s/size", g.gl_pathv[i]);
            read_line(path, size, sizeof size);
            printf(" L%s%s %s", level, !strcmp(type, "Data") ? "d" : !strcmp(type, "Instruction") ? "i" : "", size);
        }
        globfree(&g);
    } else {
        printf(" ?");
    }
    printf("\n");
}

int main(int argc, char **argv)
{
    int mib = argc > 1 ? atoi(argv[1]) : 64;
    nreps = argc > 2 ? atoi(argv[2]) : 7;
    cold = argc > 3 ? atoi(argv[3]) : 0;
    if (mib < 1 || nreps < 1) die("usage: h2d_paths [MiB=64] [reps=7] [cold=0]");
    bytes = (size_t)mib * MIB;
    print_machine();

    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cu) die("cannot open libcuda.so.1: %s", dlerror());
    LOAD(cu, cuInit); LOAD(cu, cuDriverGetVersion); LOAD(cu, cuDeviceGet); LOAD(cu, cuDeviceGetName);
    LOAD(cu, cuDevicePrimaryCtxRetain); LOAD(cu, cuCtxSetCurrent); LOAD(cu, cuCtxSynchronize);
    LOAD(cu, cuGetErrorName); LOAD(cu, cuMemAlloc); LOAD(cu, cuMemsetD8); LOAD(cu, cuMemHostAlloc);
    LOAD(cu, cuMemcpyHtoD); LOAD(cu, cuMemcpyDtoH); LOAD(cu, cuMemcpyHtoDAsync); LOAD(cu, cuMemHostRegister);
    LOAD(cu, cuMemHostUnregister); LOAD(cu, cuStreamCreate); LOAD(cu, cuStreamSynchronize);
    LOAD(cu, cuEventCreate); LOAD(cu, cuEventRecord); LOAD(cu, cuEventQuery); LOAD(cu, cuEventSynchronize);

    CUdevice dev;
    char name[128];
    int version;
    CK(p_cuInit(0));
    CK(p_cuDriverGetVersion(&version));
    CK(p_cuDeviceGet(&dev, 0));
    CK(p_cuDeviceGetName(name, sizeof name, dev));
    CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(p_cuCtxSetCurrent(ctx));
    printf("device: %s, driver CUDA %d.%d; %d MiB, %d reps (+1 warm-up) per variant%s\n", name, version / 1000,
           version % 1000 / 10, mib, nreps, cold ? ", source flushed from the caches before each rep" : "");

    static const int regpipe_cfg[][2] = {{1, 16}, {4, 16}, {8, 16}, {16, 16}, {16, 64}, {8, 64}};
    static const struct { int T; size_t C; int S; } cached_cfg[] = {
        {8, 256 << 10, 32}, {15, 256 << 10, 32}, {15, 512 << 10, 32},
        {15, 1 << 20, 32}, {8, 1 << 20, 16}, {15, 128 << 10, 64},
    };
    static const struct { int T; size_t C; int S; } nt_cfg = {16, 1 << 20, 32};
    for (size_t i = 0; i < sizeof cached_cfg / sizeof *cached_cfg; i++)
        if (cached_cfg[i].C * cached_cfg[i].S > slot_bytes) slot_bytes = cached_cfg[i].C * cached_cfg[i].S;
    if (nt_cfg.C * nt_cfg.S > slot_bytes) slot_bytes = nt_cfg.C * nt_cfg.S;

    src = aligned_alloc(4096, bytes);
    if (!src) die("aligned_alloc of %zu bytes failed", bytes);
    fill(src);
    CK(p_cuMemHostAlloc((void **)&psrc, bytes, 0));
    memcpy(psrc, src, bytes);
    CK(p_cuMemHostAlloc((void **)&check, bytes, 0));
    CK(p_cuMemHostAlloc((void **)&slots, slot_bytes, 0));
    CK(p_cuMemAlloc(&dptr, bytes));
    for (int i = 0; i < MAXS; i++) {
        CK(p_cuStreamCreate(&streams[i], CU_STREAM_NON_BLOCKING));
        CK(p_cuEventCreate(&events[i], CU_EVENT_DISABLE_TIMING));
    }
    pool_create();

    double med[NM], best[NM];
    char params[64], extra[512];
    int ok;

    ok = bench(rep_plain, psrc, psrc, med, best);
    line("pinned", "", med, best, ok, "");
    ok = bench(rep_plain, src, src, med, best);
    line("pageable_raw", "", med, best, ok, "");
    {
        static const struct chunked cc[] = {{256 << 10, 32}, {1 << 20, 32}, {1 << 20, 1}, {2 << 20, 32}, {4 << 20, 16}};
        for (size_t i = 0; i < sizeof cc / sizeof *cc; i++) {
            ok = bench(rep_pinned_chunked, (void *)&cc[i], psrc, med, best);
            snprintf(params, sizeof params, "C=%zuK S=%d", cc[i].C >> 10, cc[i].S);
            line("pinned_chunked", params, med, best, ok, "");
        }
    }
    if (getenv("H2D_ONLY_PINNED")) return 0;

    ok = bench(rep_register_whole, NULL, src, med, best);
    snprintf(extra, sizeof extra, "| incl unregister %.1f GB/s; register %.2f ms, copy %.2f ms (%.1f GB/s), unregister %.2f ms",
             gbs(med[1]), med[2] * 1e3, med[3] * 1e3, gbs(med[3]), med[4] * 1e3);
    line("register_whole", "", med, best, ok, extra);

    for (size_t i = 0; i < sizeof regpipe_cfg / sizeof *regpipe_cfg; i++) {
        static struct regpipe r;
        r.T = regpipe_cfg[i][0];
        r.P = regpipe_cfg[i][1];
        if (r.P > MAXP) die("P=%d is more than MAXP", r.P);
        r.piece = bytes / r.P / 4096 * 4096;
        if (!r.piece) r.piece = 4096;
        if ((size_t)r.P > (bytes + r.piece - 1) / r.piece) r.P = (int)((bytes + r.piece - 1) / r.piece);
        double pages = (double)bytes / 4096;
        ok = bench(rep_regpipe, &r, src, med, best);
        snprintf(params, sizeof params, "T=%d P=%d", r.T, r.P);
        snprintf(extra, sizeof extra,
                 "| incl unregister median %.1f best %.1f GB/s; register sum %.2f ms, wall %.2f ms "
                 "(%.0f ns/page in calls, %.0f ns/page wall, %.1f in parallel)",
                 gbs(med[1]), gbs(best[1]), med[2] * 1e3, med[3] * 1e3, med[2] * 1e9 / pages, med[3] * 1e9 / pages,
                 med[3] > 0 ? med[2] / med[3] : 0);
        line("register_pipelined", params, med, best, ok, extra);
    }

    for (size_t i = 0; i < sizeof cached_cfg / sizeof *cached_cfg; i++) {
        static struct staged st;
        st.T = cached_cfg[i].T;
        st.C = cached_cfg[i].C;
        st.S = cached_cfg[i].S;
        st.nstreams = 2;
        st.nchunks = (bytes + st.C - 1) / st.C;
        if (st.S > MAXS || st.T > POOL) die("S or T too large");
        ok = bench(rep_cached, &st, src, med, best);
        snprintf(params, sizeof params, "T=%d C=%zuK S=%d", st.T, st.C >> 10, st.S);
        snprintf(extra, sizeof extra, "| %zu chunks, %d streams, one issuing thread", st.nchunks, st.nstreams);
        line("staged_cached", params, med, best, ok, extra);
    }

    {
        static struct ntstaged st;
        st.T = nt_cfg.T;
        st.C = nt_cfg.C;
        st.S = nt_cfg.S;
        st.off = malloc((bytes / (64 << 10) + 1) * sizeof *st.off);
        st.len = malloc((bytes / (64 << 10) + 1) * sizeof *st.len);
        if (!st.off || !st.len) die("out of memory");
        st.nchunks = 0;
        for (size_t off = 0, c = 64 << 10; off < bytes; off += st.len[st.nchunks++]) {
            st.off[st.nchunks] = off;
            st.len[st.nchunks] = bytes - off < c ? bytes - off : c;
            if (c < st.C) c *= 2;
        }
        ok = bench(rep_nt, &st, src, med, best);
        snprintf(params, sizeof params, "T=%d C=%zuK S=%d", st.T, st.C >> 10, st.S);
        snprintf(extra, sizeof extra, "| %zu chunks from 64K doubling, %d streams, every thread issues", st.nchunks, st.S);
        line("staged_nt_current", params, med, best, ok, extra);
    }
    return 0;
}
