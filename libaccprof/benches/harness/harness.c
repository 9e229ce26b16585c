/* What a tool costs per OpenACC callback, measured from C the way a runtime calls it: the tool
   library is dlopened (or already preloaded) and registered through acc_register_library with
   a runtime of our own (fake_runtime.c, libfakeacc.so), whose dispatch calls the callbacks.
   In one process and alternating rounds it measures an empty callback, a trivial C tool that
   stores a record (store_tool.c), and each tool library named on the command line.

   Event shapes:
     shim  launch and upload pairs with every field a full runtime fills (the bundled shim,
           NVHPC): source file, function, lines, variable or kernel name, bytes, pointers,
           geometry, CUDA handles;
     gcc   GCC's libgomp offloading a compute construct (14 callbacks, as in
           traces/gpu/gcc_data.trace): no source location (the tool finds the call site),
           thread id -1, implicit enter/exit data, alloc/free, the argument block's upload,
           the launch. Two constructs at two call sites per iteration.
   Modes:
     warm  callbacks back to back: ns per callback over the whole loop, wall and thread CPU;
     cold  EVICT_KIB of memory written between two callbacks (what the driver and the
           program do between two callbacks of a real run): ns per callback from TSC reads
           around each dispatch;
     l1    as cold, but 64 KiB written and 64 KiB of other code run between two callbacks:
           the first-level caches hold none of the tool's lines, the second level all of them
           (a CUDA driver call between two callbacks, with the tool's lines still in L2);
     tlb   as l1, and one line written in each of 4096 pages (16 MiB) besides: the address
           translations cached for the tool's pages are gone too.

   Build and run: bash libaccprof/benches/harness/run.sh (docs/performance/libaccprof.md). */
#define _GNU_SOURCE
#include <acc_prof.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

void fake_dispatch(acc_prof_info *p, acc_event_info *e, acc_api_info *a);
void fake_take_table(acc_prof_callback out[acc_ev_last]);
void fake_set_table(const acc_prof_callback in[acc_ev_last]);
void acc_prof_register(acc_event_t ev, acc_prof_callback cb, acc_register_t info);
void acc_prof_unregister(acc_event_t ev, acc_prof_callback cb, acc_register_t info);

#define MAX_TOOLS 12
struct tool {
    const char *name;
    acc_prof_callback table[acc_ev_last];
    double ns[64];
    double cpu_ns[64];
    int rounds;
};
static struct tool tools[MAX_TOOLS];
static int ntools;

static void empty_cb(acc_prof_info *p, acc_event_info *e, acc_api_info *a) {
    __asm__ volatile("" ::"r"(p), "r"(e), "r"(a) : "memory");
}

static double now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* ---- events ---------------------------------------------------------------------------- */

struct ev {
    acc_prof_info p;
    acc_event_info e;
    acc_api_info a;
};

static void prof(struct ev *v, acc_event_t t, int full) {
    memset(v, 0, sizeof *v);
    v->p.event_type = t;
    v->p.valid_bytes = sizeof(acc_prof_info);
    v->p.version = full ? 202011 : 201711;
    v->p.device_type = full ? acc_device_nvidia : (acc_device_t)5;
    v->p.device_number = 0;
    v->p.thread_id = -1;
    v->p.async = full ? -1 : -2;
    v->p.async_queue = full ? -1 : -2;
    v->p.src_file = full ? "laplace.c" : NULL;
    v->p.func_name = full ? "main" : NULL;
    v->p.line_no = full ? 62 : -1;
    v->p.end_line_no = full ? 70 : -1;
    v->p.func_line_no = full ? 40 : -1;
    v->p.func_end_line_no = full ? 90 : -1;
    v->e.other_event.event_type = t;
    v->e.other_event.parent_construct = acc_construct_parallel;
    v->a.device_api = acc_device_api_cuda;
    v->a.valid_bytes = sizeof(acc_api_info);
    v->a.device_type = v->p.device_type;
    if (full) {
        v->a.device_handle = (void *)1;
        v->a.context_handle = (void *)0x1234;
        v->a.async_handle = (void *)0x5678;
    }
}

static void data(struct ev *v, acc_event_t t, int full, const char *var, size_t bytes, uintptr_t host, uintptr_t dev, int implicit) {
    prof(v, t, full);
    v->e.data_event.valid_bytes = sizeof(acc_data_event_info);
    v->e.data_event.implicit = implicit;
    v->e.data_event.var_name = var;
    v->e.data_event.bytes = bytes;
    v->e.data_event.host_ptr = (void *)host;
    v->e.data_event.device_ptr = (void *)dev;
}

static void launch(struct ev *v, acc_event_t t, int full, const char *kernel, size_t g, size_t w, size_t vl) {
    prof(v, t, full);
    v->e.launch_event.valid_bytes = sizeof(acc_launch_event_info);
    v->e.launch_event.implicit = full ? 0 : 1;
    v->e.launch_event.kernel_name = kernel;
    v->e.launch_event.num_gangs = g;
    v->e.launch_event.num_workers = w;
    v->e.launch_event.vector_length = vl;
}

static void other(struct ev *v, acc_event_t t, int implicit) {
    prof(v, t, 0);
    v->e.other_event.valid_bytes = sizeof(acc_other_event_info);
    v->e.other_event.implicit = implicit;
}

static struct ev shim_evs[4];
static struct ev gcc_evs[2][14];

static void make_events(void) {
    launch(&shim_evs[0], acc_ev_enqueue_launch_start, 1, "main_62_gpu", 4096, 1, 128);
    launch(&shim_evs[1], acc_ev_enqueue_launch_end, 1, "main_62_gpu", 4096, 1, 128);
    data(&shim_evs[2], acc_ev_enqueue_upload_start, 1, "A[0:n*n]", 8 << 20, 0x7f0000000000, 0x700000000000, 0);
    data(&shim_evs[3], acc_ev_enqueue_upload_end, 1, "A[0:n*n]", 8 << 20, 0x7f0000000000, 0x700000000000, 0);
    static const char *kernels[2] = {"main$_omp_fn$0", "main$_omp_fn$1"};
    for (int c = 0; c < 2; c++) {
        struct ev *v = gcc_evs[c];
        other(&v[0], acc_ev_compute_construct_start, 0);
        other(&v[1], acc_ev_enter_data_start, 1);
        data(&v[2], acc_ev_alloc, 0, NULL, 19, 0, 0x7f6a86200000, 1);
        other(&v[3], acc_ev_enter_data_end, 1);
        data(&v[4], acc_ev_alloc, 0, NULL, 32, 0, 0x7f6a86200200, 1);
        data(&v[5], acc_ev_enqueue_upload_start, 0, NULL, 32, 0x7fff0e41c920, 0x7f6a86200200, 1);
        data(&v[6], acc_ev_enqueue_upload_end, 0, NULL, 32, 0x7fff0e41c920, 0x7f6a86200200, 1);
        launch(&v[7], acc_ev_enqueue_launch_start, 0, kernels[c], 9504, 18, 32);
        launch(&v[8], acc_ev_enqueue_launch_end, 0, kernels[c], 9504, 18, 32);
        data(&v[9], acc_ev_free, 0, NULL, SIZE_MAX, 0, 0x7f6a86200200, 1);
        other(&v[10], acc_ev_exit_data_start, 1);
        data(&v[11], acc_ev_free, 0, NULL, SIZE_MAX, 0, 0x7f6a86200000, 1);
        other(&v[12], acc_ev_exit_data_end, 1);
        other(&v[13], acc_ev_compute_construct_end, 0);
    }
}

/* ---- measuring ------------------------------------------------------------------------- */

static uint8_t *evict_buf;
static size_t evict_bytes;
static uint64_t ticks_in_callbacks;

/* Writes over the eviction buffer, as a driver call or a kernel's host work would; then, as a
   runtime about to dispatch, uses its stack and fills the event's structures: those lines are
   warm in a real program, only the tool's own are cold. */
__attribute__((noinline)) static void use_stack(void) {
    volatile char frame[8192];
    for (size_t i = 0; i < sizeof frame; i += 64) frame[i] = 0;
}

/* 64 KiB of straight-line code, twice a first-level instruction cache. */
__attribute__((noinline)) static void run_other_code(void) {
    __asm__ volatile(".rept 65536\n\tnop\n\t.endr" ::: "memory");
}
static int evict_code;

static uint8_t *tlb_buf;
enum { TLB_PAGES = 4096 };

static void evict(struct ev *v) {
    for (size_t i = 0; i < evict_bytes; i += 64) evict_buf[i]++;
    if (tlb_buf)
        for (size_t i = 0; i < TLB_PAGES; i++) tlb_buf[i * 4096 + (i % 64) * 64]++;
    if (evict_code)
        run_other_code();
    use_stack();
    /* The thread control block: every libc call and stack-protected function reads it. */
    uint64_t canary;
    __asm__ volatile("mov %%fs:0x28, %0" : "=r"(canary));
    struct ev copy;
    memcpy(&copy, v, sizeof copy);
    __asm__ volatile("" : : "r"(&copy), "r"(canary) : "memory");
    memcpy(v, &copy, sizeof copy);
    __asm__ volatile("" : : "r"(v) : "memory");
}

static inline void call(struct ev *v, int cold) {
    if (!cold) {
        fake_dispatch(&v->p, &v->e, &v->a);
        return;
    }
    evict(v);
    _mm_lfence();
    uint64_t t0 = __rdtsc();
    _mm_lfence();
    fake_dispatch(&v->p, &v->e, &v->a);
    unsigned aux;
    uint64_t t1 = __rdtscp(&aux);
    _mm_lfence();
    ticks_in_callbacks += t1 - t0;
}

/* Two constructs at two call sites: each its own function, never inlined. */
__attribute__((noinline)) static void construct_a(int cold) {
    for (int i = 0; i < 14; i++) call(&gcc_evs[0][i], cold);
}
__attribute__((noinline)) static void construct_b(int cold) {
    for (int i = 0; i < 14; i++) call(&gcc_evs[1][i], cold);
}

/* Runs `iters` iterations of the shape; returns callbacks made. */
static long drive(int gcc, int cold, long iters) {
    long n = 0;
    for (long i = 0; i < iters; i++) {
        if (gcc) {
            construct_a(cold);
            construct_b(cold);
            n += 28;
        } else {
            int base = (i & 1) * 2;
            call(&shim_evs[base], cold);
            call(&shim_evs[base + 1], cold);
            n += 2;
        }
    }
    return n;
}

static double ticks_per_ns(void) {
    double t0 = now_ns(CLOCK_MONOTONIC);
    uint64_t c0 = __rdtsc();
    while (now_ns(CLOCK_MONOTONIC) - t0 < 20e6) {
    }
    return (double)(__rdtsc() - c0) / (now_ns(CLOCK_MONOTONIC) - t0);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    double s[64];
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void add_tool(const char *name, const char *path) {
    struct tool *t = &tools[ntools++];
    t->name = name;
    if (path) {
        /* NAME@SETTING: a libaccprof built for the per-stage benchmark (stages.sh) registers
           under ACCPROF_BENCH_STAGE=SETTING; each setting is its own copy of the library. */
        const char *at = strchr(name, '@');
        if (at)
            setenv("ACCPROF_BENCH_STAGE", at + 1, 1);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "harness: cannot load %s: %s\n", path, dlerror());
            exit(1);
        }
        void (*reg)(acc_prof_reg, acc_prof_reg, acc_prof_lookup_func) =
            (void (*)(acc_prof_reg, acc_prof_reg, acc_prof_lookup_func))dlsym(h, "acc_register_library");
        if (!reg) {
            fprintf(stderr, "harness: %s has no acc_register_library\n", path);
            exit(1);
        }
        reg(acc_prof_register, acc_prof_unregister, NULL);
    } else {
        for (int ev = acc_ev_device_init_start; ev <= acc_ev_wait_end; ev++)
            acc_prof_register((acc_event_t)ev, empty_cb, acc_reg);
    }
    fake_take_table(t->table);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr,
                "usage: harness shim|gcc warm|cold|l1|tlb CALLBACKS_PER_ROUND ROUNDS [NAME=TOOL.so ...]\n"
                "  EVICT_KIB (default 4096) sets what cold mode writes between callbacks\n");
        return 2;
    }
    int gcc = strcmp(argv[1], "gcc") == 0;
    int tlb = strcmp(argv[2], "tlb") == 0;
    int l1 = tlb || strcmp(argv[2], "l1") == 0;
    if (tlb)
        tlb_buf = calloc(TLB_PAGES, 4096);
    int cold = l1 || strcmp(argv[2], "cold") == 0;
    evict_code = l1;
    long per_round = atol(argv[3]);
    int rounds = atoi(argv[4]);
    if (rounds < 1 || rounds > 64 || per_round < 28) {
        fprintf(stderr, "harness: ROUNDS in 1..64, CALLBACKS_PER_ROUND at least 28\n");
        return 2;
    }
    const char *ek = getenv("EVICT_KIB");
    evict_bytes = (size_t)(ek ? atol(ek) : l1 ? 64 : 4096) << 10;
    evict_buf = calloc(1, evict_bytes + 64);
    make_events();
    /* The events' CUDA handles are made up: on a machine with a CUDA driver, a tool timing
       device work with CUDA events (accprof's default when CUPTI is not recording) would call
       the driver on them at every launch and copy, and fail. What is measured here is
       recording; device timing's cost is the driver's. */
    setenv("ACCPROF_CUDA_EVENTS", "off", 0);
    setenv("ACCPROF_CUPTI", "off", 0);
    add_tool("empty callback", NULL);
    for (int i = 5; i < argc && ntools < MAX_TOOLS; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "harness: tool argument %s is not NAME=PATH\n", argv[i]);
            return 2;
        }
        *eq = 0;
        add_tool(argv[i], eq + 1);
    }
    long iters = per_round / (gcc ? 28 : 2);
    double tpn = ticks_per_ns();
    /* Warm-up: every tool once (a tool starts recording on its first event). */
    for (int t = 0; t < ntools; t++) {
        fake_set_table(tools[t].table);
        drive(gcc, cold, iters / 10 + 1);
    }
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < ntools; k++) {
            /* A rotating start, so that no tool always follows the same one. */
            struct tool *t = &tools[(k + r) % ntools];
            fake_set_table(t->table);
            ticks_in_callbacks = 0;
            double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            long n = drive(gcc, cold, iters);
            double w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            if (cold) {
                t->ns[t->rounds] = ticks_in_callbacks / tpn / n;
                t->cpu_ns[t->rounds] = 0;
            } else {
                t->ns[t->rounds] = (w1 - w0) / n;
                t->cpu_ns[t->rounds] = (c1 - c0) / n;
            }
            t->rounds++;
        }
    }
    printf("%s events, %s, %ld callbacks per round, %d rounds (medians; %s)\n", gcc ? "gcc" : "shim",
           tlb ? "tlb" : l1 ? "l1" : cold ? "cold" : "warm", iters * (gcc ? 28 : 2), rounds,
           cold ? "TSC around each dispatch" : "wall / thread CPU over the loop");
    double base = median(tools[0].ns, tools[0].rounds);
    double base_cpu = median(tools[0].cpu_ns, tools[0].rounds);
    for (int k = 0; k < ntools; k++) {
        struct tool *t = &tools[k];
        double m = median(t->ns, t->rounds), c = median(t->cpu_ns, t->rounds);
        double lo = t->ns[0], hi = t->ns[0];
        for (int i = 1; i < t->rounds; i++) {
            lo = t->ns[i] < lo ? t->ns[i] : lo;
            hi = t->ns[i] > hi ? t->ns[i] : hi;
        }
        if (cold)
            printf("  %-16s %7.1f ns per callback (%.1f-%.1f), added %7.1f\n", t->name, m, lo, hi, m - base);
        else
            printf("  %-16s %7.1f ns per callback (%.1f-%.1f), added %7.1f; thread CPU %7.1f, added %7.1f\n", t->name,
                   m, lo, hi, m - base, c, c - base_cpu);
    }
    fflush(stdout);
    return 0;
}
