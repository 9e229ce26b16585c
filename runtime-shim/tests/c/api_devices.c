/* Device selection, initialisation and shutdown routines on the emulated device
   (acc_device_host_nonshm); argv[1] picks the case. Each prints what it sees; the test checks. */
#include <openacc.h>
#include <acc_prof.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double a[100];

static void lifecycle (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ei;
  (void) ai;
  printf ("event %d device %d/%d\n", (int) pi->event_type, (int) pi->device_type, pi->device_number);
}

static void present (const char *when)
{
  printf ("%s: present %d\n", when, acc_is_present (a, sizeof a));
}

int main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";
  setvbuf (stdout, NULL, _IONBF, 0);
  if (!strcmp (c, "shutdown_types"))
    {
      /* acc_shutdown (t) shuts down the devices of type t: not the emulated device for the
         other types; argv[2] names the type that should. */
      acc_init (acc_device_default);
      acc_copyin (a, sizeof a);
      acc_shutdown (acc_device_nvidia);
      present ("after acc_shutdown (acc_device_nvidia)");
      acc_shutdown (acc_device_host);
      present ("after acc_shutdown (acc_device_host)");
      acc_shutdown (acc_device_radeon);
      present ("after acc_shutdown (acc_device_radeon)");
      acc_shutdown ((acc_device_t) atoi (argv[2]));
      present ("after acc_shutdown (argv[2])");
    }
  else if (!strcmp (c, "shutdown_unknown_type"))
    {
      acc_init (acc_device_default);
      acc_shutdown ((acc_device_t) 42);
    }
  else if (!strcmp (c, "shutdown_uninitialised"))
    {
      /* Nothing to shut down: nothing happens. */
      acc_shutdown (acc_device_default);
      acc_shutdown (acc_device_nvidia);
    }
  else if (!strcmp (c, "set_device_num_negative"))
    {
      /* A negative number reverts to the default device number (0 here). */
      acc_set_device_num (-1, acc_device_default);
      printf ("num %d\n", acc_get_device_num (acc_device_default));
      acc_copyin (a, sizeof a);
      acc_set_device_num (-1, acc_device_host_nonshm);
      present ("after acc_set_device_num (-1, acc_device_host_nonshm)");
      printf ("num %d\n", acc_get_device_num (acc_device_host_nonshm));
    }
  else if (!strcmp (c, "init_device"))
    {
      /* acc_init_device initialises that device now; again, it is already there.
         acc_shutdown_device shuts it down. The tool prints the lifecycle events. */
      for (int e = acc_ev_device_init_start; e <= acc_ev_device_shutdown_end; e++)
        acc_prof_register ((acc_event_t) e, lifecycle, acc_reg);
      acc_init_device (0, acc_device_host_nonshm);
      printf ("initialised: type %d num %d\n", (int) acc_get_device_type (), acc_get_device_num (acc_device_host_nonshm));
      acc_init_device (0, acc_device_default);
      acc_copyin (a, sizeof a);
      present ("before acc_shutdown_device");
      acc_shutdown_device (0, acc_device_host_nonshm);
      present ("after acc_shutdown_device (0, acc_device_host_nonshm)");
      acc_init_device (0, acc_device_not_host);
      acc_shutdown_device (0, acc_device_current);
      printf ("shut down again\n");
      acc_shutdown_device (0, acc_device_default);
    }
  else if (!strcmp (c, "init_device_bad_num"))
    acc_init_device (1, acc_device_host_nonshm);
  else if (!strcmp (c, "init_device_no_such_type"))
    acc_init_device (0, acc_device_nvidia);
  else if (!strcmp (c, "shutdown_device_bad_num"))
    {
      acc_init (acc_device_default);
      acc_shutdown_device (1, acc_device_host_nonshm);
    }
  printf ("done\n");
  return 0;
}
