/* Data still present when the device shuts down (acc_shutdown, or the program's exit) is
   deleted and its device memory freed, and a tool must see that as for a data exit: delete
   and free events (delete only for acc_map_data'd memory, which the program owns), between
   device_shutdown_start and device_shutdown_end. A tool inside the program prints every data
   and lifecycle event: "<event> var=<name> bytes=<n> host=<slot> dev=<known|unknown>", where
   <slot> names which array the host address is (a, b, c or ?), and dev says whether the
   device address is the one the program saw.
   The delete and free callbacks also call the runtime, doing argv[1]: "none", "prop"
   (acc_get_property), "wait" (acc_wait on a queue), "stream" (acc_get_cuda_stream), "present"
   (acc_is_present), "init" (acc_init) or "shutdown" (acc_shutdown): this must neither hang
   nor crash while the runtime shuts down. */
#include <accshim.h>
#include <acc_prof.h>
#include <stdio.h>
#include <string.h>

#define N 100
static double a[N], b[N], c[N];
static void *dev_a, *dev_b, *dev_c;
static const char *action = "none";

static const char *slot (const void *h)
{
  return h == a ? "a" : h == b ? "b" : h == c ? "c" : "?";
}

static void call_runtime (void)
{
  if (!strcmp (action, "prop"))
    acc_get_property (0, acc_get_device_type (), acc_property_memory);
  else if (!strcmp (action, "wait"))
    acc_wait (1);
  else if (!strcmp (action, "stream"))
    acc_get_cuda_stream (1);
  else if (!strcmp (action, "present"))
    acc_is_present (a, sizeof a);
  else if (!strcmp (action, "init"))
    acc_init (acc_get_device_type ());
  else if (!strcmp (action, "shutdown"))
    acc_shutdown (acc_get_device_type ());
}

static void data_cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ai;
  static const char *names[] = { [acc_ev_create] = "create", [acc_ev_delete] = "delete",
                                 [acc_ev_alloc] = "alloc", [acc_ev_free] = "free" };
  acc_data_event_info *d = &ei->data_event;
  const void *dev = d->device_ptr;
  int known = dev && (dev == dev_a || dev == dev_b || dev == dev_c);
  printf ("%s var=%s bytes=%zu host=%s dev=%s\n", names[pi->event_type], d->var_name ? d->var_name : "-",
          d->bytes, slot (d->host_ptr), known ? "known" : "unknown");
  if (pi->event_type == acc_ev_delete || pi->event_type == acc_ev_free)
    call_runtime ();
}

static void lifecycle_cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ei;
  (void) ai;
  printf ("%s\n", pi->event_type == acc_ev_device_shutdown_start ? "device_shutdown_start" : "device_shutdown_end");
}

int main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  if (argc > 1)
    action = argv[1];
  acc_prof_register (acc_ev_create, data_cb, acc_reg);
  acc_prof_register (acc_ev_delete, data_cb, acc_reg);
  acc_prof_register (acc_ev_alloc, data_cb, acc_reg);
  acc_prof_register (acc_ev_free, data_cb, acc_reg);
  acc_prof_register (acc_ev_device_shutdown_start, lifecycle_cb, acc_reg);
  acc_prof_register (acc_ev_device_shutdown_end, lifecycle_cb, acc_reg);
  for (int round = 0; round < 2; round++)
    {
      /* a by a routine, b by an enter data directive (its clause names it), c mapped. */
      dev_a = acc_copyin (a, sizeof a);
      ACC_ENTER_DATA (ACC_COPYIN (b, 0, N));
      dev_b = acc_deviceptr (b);
      dev_c = acc_malloc (sizeof c);
      acc_map_data (c, dev_c, sizeof c);
      acc_update_device_async (a, sizeof a, 1);
      if (round == 0)
        {
          printf ("-- acc_shutdown\n");
          acc_shutdown (acc_device_default);
          printf ("-- after acc_shutdown\n");
        }
    }
  printf ("-- exit\n");
  return 0;
}
