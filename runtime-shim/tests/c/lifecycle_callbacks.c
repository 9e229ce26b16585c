/* A tool inside the program that calls runtime routines from the callback of one lifecycle
   event (argv[1]: its acc_event_t number), doing argv[2]: "prop" (acc_get_property), "wait"
   (acc_wait on a queue), "stream" (acc_get_cuda_stream), "init" (acc_init) or "shutdown"
   (acc_shutdown). The program initialises, copies asynchronously, shuts down, then uses the
   device again (which initialises it again) and exits (runtime_shutdown from the runtime's
   atexit handler).
   Prints "cb <event> ..." for each callback and "done" at the end; a hang or a crash is the
   failure the test looks for. */
#include <openacc.h>
#include <acc_prof.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *action;

static void cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ei;
  (void) ai;
  if (!strcmp (action, "prop"))
    printf ("cb %d memory %zu\n", (int) pi->event_type,
            acc_get_property (0, acc_get_device_type (), acc_property_memory));
  else if (!strcmp (action, "wait"))
    {
      acc_wait (1);
      printf ("cb %d waited\n", (int) pi->event_type);
    }
  else if (!strcmp (action, "stream"))
    {
      acc_get_cuda_stream (1);
      printf ("cb %d stream\n", (int) pi->event_type);
    }
  else if (!strcmp (action, "init"))
    {
      acc_init (acc_get_device_type ());
      printf ("cb %d init returned\n", (int) pi->event_type);
    }
  else if (!strcmp (action, "shutdown"))
    {
      acc_shutdown (acc_get_device_type ());
      printf ("cb %d shutdown returned\n", (int) pi->event_type);
    }
  fflush (stdout);
}

int main (int argc, char **argv)
{
  if (argc != 3)
    {
      fprintf (stderr, "usage: %s EVENT prop|wait|stream|init|shutdown\n", argv[0]);
      return 2;
    }
  action = argv[2];
  acc_prof_register ((acc_event_t) atoi (argv[1]), cb, acc_reg);
  static double a[1000];
  for (int i = 0; i < 1000; i++)
    a[i] = i;
  acc_init (acc_device_default);
  acc_copyin_async (a, sizeof a, 1);
  acc_shutdown (acc_device_default);
  printf ("after shutdown\n");
  acc_copyin (a, sizeof a);
  a[5] = 0;
  acc_copyout (a, sizeof a);
  printf ("a[5] = %g\n", a[5]);
  printf ("done\n");
  fflush (stdout);
  return 0;
}
