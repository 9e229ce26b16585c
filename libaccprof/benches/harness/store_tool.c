/* The floor for a tool that records: on every event it stores the kind, a TSC timestamp and
   two fields into a per-thread ring, nothing more (no strings, no joining, no file). The C
   harness (harness.c) measures libaccprof against it and against an empty callback.
   Built with -DTSC_ONLY (libtsctool.so): the TSC read alone, stored to a global, which says how
   much of the store tool's cost is the clock and how much its thread-local ring (a loaded
   library reaches `__thread` variables through the loader's __tls_get_addr). */
#include <acc_prof.h>
#include <stdint.h>
#include <x86intrin.h>

#ifdef TSC_ONLY
static volatile uint64_t last;

static void store(acc_prof_info *p, acc_event_info *e, acc_api_info *a) {
    (void)p;
    (void)e;
    (void)a;
    last = __rdtsc();
}
#else
struct rec { uint64_t kind, t, a, b; };
static __thread struct rec ring[4096];
static __thread unsigned pos;

static void store(acc_prof_info *p, acc_event_info *e, acc_api_info *a) {
    (void)a;
    struct rec *r = &ring[pos++ & 4095];
    r->kind = (uint64_t)p->event_type;
    r->t = __rdtsc();
    r->a = (uint64_t)p->line_no;
    r->b = (uint64_t)e->other_event.parent_construct;
}
#endif

void acc_register_library(acc_prof_reg reg, acc_prof_reg unreg, acc_prof_lookup_func lookup) {
    (void)unreg;
    (void)lookup;
    for (int ev = acc_ev_device_init_start; ev <= acc_ev_wait_end; ev++) reg((acc_event_t)ev, store, acc_reg);
}
