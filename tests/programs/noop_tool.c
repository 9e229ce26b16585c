/* An OpenACC tool library that registers a callback for every event and does nothing in it:
   the baseline for measuring what a tool's mere presence costs (docs/performance/libaccprof.md).
   Build: gcc -shared -fPIC -o libnoop_tool.so noop_tool.c; load with ACC_PROFLIB. */
#include <acc_prof.h>

static void noop(acc_prof_info *p, acc_event_info *e, acc_api_info *a) {
    (void)p;
    (void)e;
    (void)a;
}

void acc_register_library(acc_prof_reg reg, acc_prof_reg unreg, acc_prof_lookup_func lookup) {
    (void)unreg;
    (void)lookup;
    for (int ev = acc_ev_device_init_start; ev <= acc_ev_wait_end; ev++) reg((acc_event_t)ev, noop, acc_reg);
}
