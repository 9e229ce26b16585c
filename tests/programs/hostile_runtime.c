/* A fake OpenACC runtime that loads the tool the way the specification says (dlopen +
   acc_register_library) and then calls its callback with everything a badly behaved runtime
   can pass: NULL structures, short valid_bytes, -1 lines, NULL strings, bytes = SIZE_MAX,
   unknown event numbers, an end without its start, a start without its end, events from
   threads the tool has never seen, and events after the tool's exit handler has run.
   Prints how many callbacks it made so the test can compare with the trace. */
#include <acc_prof.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static acc_prof_callback callbacks[64];
static int calls;

static void reg(acc_event_t ev, acc_prof_callback cb, acc_register_t r) {
    if (r == acc_reg && ev >= 0 && ev < 64) callbacks[ev] = cb;
}
static void unreg(acc_event_t ev, acc_prof_callback cb, acc_register_t r) { (void)ev; (void)cb; (void)r; }
static acc_query_fn lookup(const char *name) { (void)name; return NULL; }

static void fire(acc_event_t ev, acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) {
    acc_prof_callback cb = callbacks[ev >= 0 && ev < 64 ? ev : acc_ev_none];
    if (ev == 99) cb = callbacks[acc_ev_compute_construct_start]; /* same callback function */
    if (!cb) return;
    cb(pi, ei, ai);
    calls++;
}

static void good(acc_prof_info *pi, acc_event_t ev) {
    memset(pi, 0, sizeof *pi);
    pi->event_type = ev;
    pi->valid_bytes = _ACC_PROF_INFO_VALID_BYTES;
    pi->version = 201711;
    pi->device_type = acc_device_host;
    pi->thread_id = -1;
    pi->async = -1;
    pi->async_queue = -1;
    pi->src_file = NULL;
    pi->func_name = NULL;
    pi->line_no = -1;
    pi->end_line_no = -1;
    pi->func_line_no = -1;
    pi->func_end_line_no = -1;
}

static void *other_thread(void *arg) {
    (void)arg;
    acc_prof_info pi;
    acc_event_info ei;
    memset(&ei, 0, sizeof ei);
    good(&pi, acc_ev_free);
    ei.data_event.event_type = acc_ev_free;
    ei.data_event.valid_bytes = _ACC_DATA_EVENT_INFO_VALID_BYTES;
    ei.data_event.bytes = SIZE_MAX;
    fire(acc_ev_free, &pi, &ei, NULL);
    return NULL;
}

static void after_exit(void) {
    /* Registered before the tool was loaded, so it runs after the tool's exit handler. */
    acc_prof_info pi;
    good(&pi, acc_ev_runtime_shutdown);
    fire(acc_ev_runtime_shutdown, &pi, NULL, NULL);
    printf("calls %d\n", calls);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    atexit(after_exit);
    void *tool = dlopen(argv[1], RTLD_NOW);
    if (!tool) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    void (*arl)(acc_prof_reg, acc_prof_reg, acc_prof_lookup_func) = (void (*)(acc_prof_reg, acc_prof_reg, acc_prof_lookup_func))dlsym(tool, "acc_register_library");
    if (!arl) return 2;
    arl(reg, unreg, lookup);
    arl(reg, unreg, lookup); /* a runtime that registers twice must not double events */

    acc_prof_info pi;
    acc_event_info ei;
    acc_api_info ai;
    memset(&ei, 0, sizeof ei);
    memset(&ai, 0, sizeof ai);

    /* 1. A well-formed pair with every string NULL and every line -1. */
    good(&pi, acc_ev_compute_construct_start);
    fire(acc_ev_compute_construct_start, &pi, &ei, &ai);
    good(&pi, acc_ev_compute_construct_end);
    fire(acc_ev_compute_construct_end, &pi, &ei, &ai);

    /* 2. NULL event and api info, and a prof_info that claims only 8 valid bytes. */
    good(&pi, acc_ev_enqueue_launch_start);
    pi.valid_bytes = 8;
    fire(acc_ev_enqueue_launch_start, &pi, NULL, NULL);
    good(&pi, acc_ev_enqueue_launch_end);
    pi.valid_bytes = 8;
    fire(acc_ev_enqueue_launch_end, &pi, NULL, NULL);

    /* 3. An end without its start. */
    good(&pi, acc_ev_wait_end);
    fire(acc_ev_wait_end, &pi, &ei, &ai);

    /* 4. Free with bytes = SIZE_MAX and a NULL host pointer (what libgomp passes). */
    good(&pi, acc_ev_free);
    ei.data_event.event_type = acc_ev_free;
    ei.data_event.valid_bytes = _ACC_DATA_EVENT_INFO_VALID_BYTES;
    ei.data_event.bytes = SIZE_MAX;
    ei.data_event.var_name = NULL;
    fire(acc_ev_free, &pi, &ei, &ai);

    /* 5. An event number no specification defines. */
    good(&pi, (acc_event_t)99);
    fire((acc_event_t)99, &pi, &ei, &ai);

    /* 5b. Events inside a transfer (no runtime nests in one, but one may): an upload holding
     * an alloc and a launch; then a download the program ends inside. */
    good(&pi, acc_ev_enqueue_upload_start);
    memset(&ei, 0, sizeof ei);
    ei.data_event.event_type = acc_ev_enqueue_upload_start;
    ei.data_event.valid_bytes = _ACC_DATA_EVENT_INFO_VALID_BYTES;
    ei.data_event.var_name = "A";
    ei.data_event.bytes = 64;
    ei.data_event.host_ptr = &ai;
    ei.data_event.device_ptr = &ei;
    fire(acc_ev_enqueue_upload_start, &pi, &ei, &ai);
    good(&pi, acc_ev_alloc);
    ei.data_event.event_type = acc_ev_alloc;
    fire(acc_ev_alloc, &pi, &ei, &ai);
    acc_event_info li;
    memset(&li, 0, sizeof li);
    li.launch_event.event_type = acc_ev_enqueue_launch_start;
    li.launch_event.valid_bytes = _ACC_LAUNCH_EVENT_INFO_VALID_BYTES;
    li.launch_event.kernel_name = "inner";
    li.launch_event.num_gangs = 1;
    li.launch_event.num_workers = 1;
    li.launch_event.vector_length = 32;
    good(&pi, acc_ev_enqueue_launch_start);
    fire(acc_ev_enqueue_launch_start, &pi, &li, &ai);
    good(&pi, acc_ev_enqueue_launch_end);
    li.launch_event.event_type = acc_ev_enqueue_launch_end;
    fire(acc_ev_enqueue_launch_end, &pi, &li, &ai);
    good(&pi, acc_ev_enqueue_upload_end);
    ei.data_event.event_type = acc_ev_enqueue_upload_end;
    fire(acc_ev_enqueue_upload_end, &pi, &ei, &ai);
    good(&pi, acc_ev_enqueue_download_start);
    ei.data_event.event_type = acc_ev_enqueue_download_start;
    ei.data_event.var_name = "B";
    fire(acc_ev_enqueue_download_start, &pi, &ei, &ai);
    memset(&ei, 0, sizeof ei);

    /* 6. A start that never ends (the program ends inside it). */
    good(&pi, acc_ev_update_start);
    pi.src_file = "hostile.c";
    pi.line_no = 42;
    fire(acc_ev_update_start, &pi, &ei, &ai);

    /* 7. A thread the tool has never seen, which then ends. */
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);

    /* 8. NULL prof_info: nothing can be known, nothing may crash. */
    if (callbacks[acc_ev_alloc]) callbacks[acc_ev_alloc](NULL, NULL, NULL);

    printf("main done\n");
    return 0;
}
