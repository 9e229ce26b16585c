/* A profiling tool written against the system's <acc_prof.h> (GCC's), loaded by the tests
   through ACC_PROFLIB. It registers a callback for every event and writes one line per event
   to the file named by ACCSHIM_TOOL_LOG, with every field the runtime filled. Start events hand
   a token through tool_info; the matching end event checks it came back ("tool_info=ok"). */
#include <acc_prof.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static const char *names[] = {
  "none", "device_init_start", "device_init_end", "device_shutdown_start",
  "device_shutdown_end", "runtime_shutdown", "create", "delete", "alloc", "free",
  "enter_data_start", "enter_data_end", "exit_data_start", "exit_data_end",
  "update_start", "update_end", "compute_construct_start", "compute_construct_end",
  "enqueue_launch_start", "enqueue_launch_end", "enqueue_upload_start",
  "enqueue_upload_end", "enqueue_download_start", "enqueue_download_end",
  "wait_start", "wait_end" };

struct token { int magic; acc_event_t start; };

static const char *s (const char *p) { return p ? p : "(null)"; }

static void cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  acc_event_t ev = pi->event_type;
  char extra[512] = "";
  const char *ti = "";
  int is_start = ev == acc_ev_device_init_start || ev == acc_ev_device_shutdown_start
    || ev == acc_ev_enter_data_start || ev == acc_ev_exit_data_start
    || ev == acc_ev_update_start || ev == acc_ev_compute_construct_start
    || ev == acc_ev_enqueue_launch_start || ev == acc_ev_enqueue_upload_start
    || ev == acc_ev_enqueue_download_start || ev == acc_ev_wait_start;
  int is_end = ev == acc_ev_device_init_end || ev == acc_ev_device_shutdown_end
    || ev == acc_ev_enter_data_end || ev == acc_ev_exit_data_end
    || ev == acc_ev_update_end || ev == acc_ev_compute_construct_end
    || ev == acc_ev_enqueue_launch_end || ev == acc_ev_enqueue_upload_end
    || ev == acc_ev_enqueue_download_end || ev == acc_ev_wait_end;
  if (is_start)
    {
      if (ei->other_event.tool_info != NULL)
        ti = " tool_info=dirty";
      struct token *t = malloc (sizeof *t);
      t->magic = 0x5eed; t->start = ev;
      ei->other_event.tool_info = t;
    }
  else if (is_end)
    {
      struct token *t = ei->other_event.tool_info;
      if (t && t->magic == 0x5eed && t->start == ev - 1)
        { ti = " tool_info=ok"; t->magic = 0; free (t); }
      else
        ti = " tool_info=BAD";
    }
  switch (ev)
    {
    case acc_ev_create: case acc_ev_delete: case acc_ev_alloc: case acc_ev_free:
    case acc_ev_enqueue_upload_start: case acc_ev_enqueue_upload_end:
    case acc_ev_enqueue_download_start: case acc_ev_enqueue_download_end:
      snprintf (extra, sizeof extra, " var=%s bytes=%zu host=%p dev=%p evb=%d",
                s (ei->data_event.var_name), ei->data_event.bytes,
                ei->data_event.host_ptr, ei->data_event.device_ptr, ei->data_event.valid_bytes);
      break;
    case acc_ev_enqueue_launch_start: case acc_ev_enqueue_launch_end:
      snprintf (extra, sizeof extra, " kernel=%s gangs=%zu workers=%zu vector=%zu evb=%d",
                s (ei->launch_event.kernel_name), ei->launch_event.num_gangs,
                ei->launch_event.num_workers, ei->launch_event.vector_length,
                ei->launch_event.valid_bytes);
      break;
    default:
      snprintf (extra, sizeof extra, " evb=%d", ei->other_event.valid_bytes);
    }
  pthread_mutex_lock (&lock);
  if (out)
    {
      fprintf (out,
               "%s version=%d vb=%d devtype=%d devnum=%d thread=%d async=%ld queue=%ld "
               "file=%s func=%s line=%d end=%d fline=%d fend=%d construct=%d implicit=%d "
               "api=%d avb=%d apidevtype=%d dh=%p ctx=%p stream=%p%s%s\n",
               names[ev], pi->version, pi->valid_bytes, (int) pi->device_type,
               pi->device_number, pi->thread_id, (long) pi->async, (long) pi->async_queue,
               s (pi->src_file), s (pi->func_name), pi->line_no, pi->end_line_no,
               pi->func_line_no, pi->func_end_line_no,
               (int) ei->other_event.parent_construct, ei->other_event.implicit,
               (int) ai->device_api, ai->valid_bytes, (int) ai->device_type,
               ai->device_handle, ai->context_handle, ai->async_handle, extra, ti);
      fflush (out);
    }
  pthread_mutex_unlock (&lock);
}

void acc_register_library (acc_prof_reg reg, acc_prof_reg unreg, acc_prof_lookup_func lookup)
{
  (void) unreg; (void) lookup;
  const char *path = getenv ("ACCSHIM_TOOL_LOG");
  out = path ? fopen (path, "w") : stderr;
  if (out)
    fprintf (out, "registered\n");
  for (int e = acc_ev_device_init_start; e <= acc_ev_wait_end; e++)
    reg ((acc_event_t) e, cb, acc_reg);
}
