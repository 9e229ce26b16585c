/* How fast the host side of a staged upload can copy, apart from CUDA: T threads take 256 KiB
 * pieces of a 64 MiB source in order and copy each into a 32 MiB ring of locked buffers (as the
 * shim's staging threads fill its eight 4 MiB pinned buffers), with the source evicted from the
 * caches before each repetition, by writing 512 MiB elsewhere ("written-out") or reading them
 * ("read-out"). Where host memory limits an upload, this tells which stores the staging copies
 * should use.
 *
 * Variants (the "stores" column): ordinary stores; ordinary stores then CLDEMOTE (the shim's
 * choice where the CPU has it); non-temporal stores; CLDEMOTE with the source's next pages
 * touched ahead of the copy (a software TLB prefetch); a copy loop of our own that prefetches
 * the source 2 or 8 KiB ahead, with demoted, non-temporal or ordinary stores; CLDEMOTE of each
 * 16 KiB one step behind the copy, so that the demotes overlap the next block's loads; and
 * demoting with the ring brought back into the caches after the eviction (is the ring's read
 * for ownership what slows the demoted copy?). The CLDEMOTE variants run only where CPUID
 * reports the instruction. An optional second argument names the variants to run,
 * comma-separated.
 *
 * Build: gcc -O2 -march=x86-64-v2 -pthread scripts/gpu/stage_copy_rate.c -o stage_copy_rate
 * Run:   stage_copy_rate [reps [variant,...]]      (figures: docs/performance/shim.md) */
#define _GNU_SOURCE
#include <emmintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MIB (1ul << 20)
#define SRC_BYTES (64 * MIB)
#define RING_BYTES (32 * MIB)
#define FLUSH_BYTES (512 * MIB)

enum stores { REGULAR, DEMOTE, NONTEMPORAL, DEMOTE_TLB_AHEAD, DEMOTE_PF, NONTEMPORAL_PF, REGULAR_PF, DEMOTE_LAG, DEMOTE_WARM_RING, N_STORES };
static const char *store_names[] = {"regular", "demote", "nt", "demote+tlb-ahead", "demote+prefetch", "nt+prefetch",
                                    "regular+prefetch", "demote-lagging", "demote+ring-cached"};
/* How far ahead of the copy the *_PF variants prefetch the source (bytes); set per run. */
static size_t prefetch_ahead = 2048;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *m) {
    fprintf(stderr, "stage_copy_rate: %s\n", m);
    exit(1);
}

/* 2 MiB aligned; huge pages asked for or refused, then every page touched (and locked). */
static unsigned char *region(size_t bytes, int huge, int lock) {
    size_t al = 2 * MIB;
    unsigned char *p = mmap(NULL, bytes + al, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap failed");
    p = (unsigned char *)(((uintptr_t)p + al - 1) & ~(uintptr_t)(al - 1));
    if (madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) perror("madvise");
    for (size_t i = 0; i < bytes; i += 4096) p[i] = (unsigned char)i;
    if (lock && mlock(p, bytes)) perror("mlock (ring stays pageable)");
    return p;
}

static void copy_nt(unsigned char *d, const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32)), e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    _mm_sfence();
}

/* A copy loop of our own that prefetches the source `prefetch_ahead` bytes ahead (into L2:
 * the hardware's streamers stop at 4 KiB page boundaries, software prefetches do not). */
static void copy_pf(unsigned char *d, const unsigned char *s, size_t n, int nt) {
    for (size_t i = 0; i < n; i += 64) {
        _mm_prefetch((const char *)s + i + prefetch_ahead, _MM_HINT_T1);
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32)), e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        if (nt) {
            _mm_stream_si128((__m128i *)(d + i), a);
            _mm_stream_si128((__m128i *)(d + i + 16), b);
            _mm_stream_si128((__m128i *)(d + i + 32), c);
            _mm_stream_si128((__m128i *)(d + i + 48), e);
        } else {
            _mm_store_si128((__m128i *)(d + i), a);
            _mm_store_si128((__m128i *)(d + i + 16), b);
            _mm_store_si128((__m128i *)(d + i + 32), c);
            _mm_store_si128((__m128i *)(d + i + 48), e);
        }
    }
    if (nt) _mm_sfence();
}

static void demote(unsigned char *d, size_t n) {
    for (size_t i = 0; i < n; i += 64) __asm__ volatile("cldemote (%0)" ::"r"(d + i));
}

struct job {
    unsigned char *src, *ring;
    size_t piece;
    enum stores stores;
    atomic_size_t next;
    atomic_int ready, go;
};

static void *worker(void *arg) {
    struct job *j = arg;
    atomic_fetch_add_explicit(&j->ready, 1, memory_order_release);
    while (!atomic_load_explicit(&j->go, memory_order_acquire)) __builtin_ia32_pause();
    size_t pieces = SRC_BYTES / j->piece;
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (i >= pieces) return NULL;
        const unsigned char *s = j->src + i * j->piece;
        unsigned char *d = j->ring + (i * j->piece) % RING_BYTES;
        switch (j->stores) {
        case REGULAR: memcpy(d, s, j->piece); break;
        case DEMOTE: memcpy(d, s, j->piece); demote(d, j->piece); break;
        case NONTEMPORAL: copy_nt(d, s, j->piece); break;
        case DEMOTE_TLB_AHEAD:
            /* 16 KiB at a time, touching the source page 8 pages ahead first. */
            for (size_t o = 0; o < j->piece; o += 16384) {
                if (i * j->piece + o + 8 * 4096 < SRC_BYTES) __builtin_prefetch(s + o + 8 * 4096, 0, 0);
                memcpy(d + o, s + o, 16384);
                demote(d + o, 16384);
            }
            break;
        case DEMOTE_PF:
            for (size_t o = 0; o < j->piece; o += 4096) {
                copy_pf(d + o, s + o, 4096, 0);
                demote(d + o, 4096);
            }
            break;
        case NONTEMPORAL_PF: copy_pf(d, s, j->piece, 1); break;
        case REGULAR_PF: copy_pf(d, s, j->piece, 0); break;
        case DEMOTE_LAG:
            for (size_t o = 0; o < j->piece; o += 16384) {
                memcpy(d + o, s + o, 16384);
                if (o) demote(d + o - 16384, 16384);
            }
            demote(d + j->piece - 16384, 16384);
            break;
        case DEMOTE_WARM_RING: memcpy(d, s, j->piece); demote(d, j->piece); break;
        case N_STORES: break;
        }
    }
}

/* GB/s of one repetition with `threads` threads. */
/* Evicts the source: by writing FLUSH_BYTES (the caches then hold dirty lines, written back
 * during the copy) or by reading them (clean lines). */
static volatile uint64_t sink;
static void evict(unsigned char *flush, int by_reading) {
    if (!by_reading) {
        memset(flush, 1, FLUSH_BYTES);
        return;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < FLUSH_BYTES; i += 64) sum += flush[i];
    sink = sum;
}

static double once(unsigned char *src, unsigned char *ring, unsigned char *flush, int threads, size_t piece, enum stores st, int flush_mode) {
    if (flush_mode) evict(flush, flush_mode == 2);
    if (st == DEMOTE_WARM_RING) {
        uint64_t sum = 0;
        for (size_t i = 0; i < RING_BYTES; i += 64) sum += ring[i];
        sink = sum;
    }
    struct job j = {.src = src, .ring = ring, .piece = piece, .stores = st};
    atomic_init(&j.next, 0);
    atomic_init(&j.go, 0);
    atomic_init(&j.ready, 0);
    pthread_t th[64];
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker, &j)) die("pthread_create failed");
    /* The clock starts once every thread is running (a pool's threads are already there). */
    while (atomic_load_explicit(&j.ready, memory_order_acquire) < threads) __builtin_ia32_pause();
    double t0 = now();
    atomic_store_explicit(&j.go, 1, memory_order_release);
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    return SRC_BYTES / (now() - t0) / 1e9;
}

/* Whether `name` is one of the comma-separated `list`. */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',')) {
        if (*p == ',') p++;
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return 1;
    }
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 100) die("reps: 1 to 100");
    const char *only = argc > 2 ? argv[2] : NULL;
    unsigned int a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    int has_demote = (c >> 25) & 1;
    FILE *thp = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char mode[128] = "?";
    if (thp && fgets(mode, sizeof mode, thp)) mode[strcspn(mode, "\n")] = 0;
    if (thp) fclose(thp);
    printf("cldemote %s; transparent huge pages: %s\n", has_demote ? "yes" : "no", mode);
    unsigned char *flush = region(FLUSH_BYTES, 1, 0);
    unsigned char *src[1] = {region(SRC_BYTES, 0, 0)};
    unsigned char *ring[1] = {region(RING_BYTES, 0, 1)};
    int threads[] = {1, 8, 16};
    printf("%-18s %-6s %-11s %7s  %s\n", "stores", "ahead", "source", "threads", "GB/s: median (best) of reps; 4 KiB pages");
    for (int flush_mode = 1; flush_mode <= 2; flush_mode++)
        for (int st = REGULAR; st < N_STORES; st++) {
            if ((st == DEMOTE || st == DEMOTE_TLB_AHEAD || st == DEMOTE_PF || st == DEMOTE_LAG || st == DEMOTE_WARM_RING) && !has_demote) continue;
            if (only && !listed(only, store_names[st])) continue;
            size_t aheads[] = {2048, 8192};
            int n_ahead = (st == DEMOTE_PF || st == NONTEMPORAL_PF || st == REGULAR_PF) ? 2 : 1;
            for (int a = 0; a < n_ahead; a++) {
                prefetch_ahead = aheads[a];
                for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
                    double r[100];
                    for (int i = 0; i < reps; i++) r[i] = once(src[0], ring[0], flush, threads[k], 256 << 10, st, flush_mode);
                    qsort(r, reps, sizeof *r, cmp);
                    printf("%-18s %-6zu %-11s %7d  %.1f (%.1f)\n", store_names[st], n_ahead > 1 ? prefetch_ahead : 0,
                           flush_mode == 1 ? "written-out" : "read-out", threads[k], r[reps / 2], r[reps - 1]);
                    fflush(stdout);
                }
            }
        }
    return 0;
}
