/* The runtime half of the C harness (harness.c): a shared library with the profiling
   interface's acc_prof_register, and a dispatch function that calls the tool's callback the
   way a runtime does. It is a library of its own, like libgomp, so that a tool walking the
   stack for the construct's call site finds the harness's frame beyond it. */
#include <acc_prof.h>
#include <stddef.h>

static acc_prof_callback callbacks[acc_ev_last];

void acc_prof_register(acc_event_t ev, acc_prof_callback cb, acc_register_t info) {
    (void)info;
    if (ev > acc_ev_none && ev < acc_ev_last && cb) callbacks[ev] = cb;
}

void acc_prof_unregister(acc_event_t ev, acc_prof_callback cb, acc_register_t info) {
    (void)cb;
    (void)info;
    if (ev > acc_ev_none && ev < acc_ev_last) callbacks[ev] = NULL;
}

/* Calls the registered callback for p->event_type; never inlined into the caller, so the
   harness's return address is where a program's construct would be. */
__attribute__((noinline)) void fake_dispatch(acc_prof_info *p, acc_event_info *e, acc_api_info *a) {
    acc_prof_callback cb = callbacks[p->event_type];
    if (cb) cb(p, e, a);
    __asm__ volatile("" ::: "memory");
}

/* The harness measures several tools in one process: after each tool registered, it takes
   the table (leaving it empty for the next tool) and later puts back the one to measure. */
void fake_take_table(acc_prof_callback out[acc_ev_last]) {
    for (int i = 0; i < acc_ev_last; i++) {
        out[i] = callbacks[i];
        callbacks[i] = NULL;
    }
}

void fake_set_table(const acc_prof_callback in[acc_ev_last]) {
    for (int i = 0; i < acc_ev_last; i++) callbacks[i] = in[i];
}
