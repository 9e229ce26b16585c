/* acc-default-async-var (acc_set_default_async / acc_get_default_async) is a value of each
   thread (OpenACC 3.x: "for the current thread"), and a shutdown does not reset it.
   The main thread sets 3, another thread 7; each one's acc_async_noval work (a routine and a
   compute construct) must run on its own default queue, and with acc_async_sync as the
   default, synchronously. A tool inside the program prints the
   queue of each upload and launch: "<thread> <event> async=<a> queue=<q>". */
#include <accshim.h>
#include <acc_prof.h>
#include <pthread.h>
#include <stdio.h>

static double a[64];
static __thread const char *who = "?";

static void cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ei;
  (void) ai;
  printf ("%s %s async=%ld queue=%ld\n", who, pi->event_type == acc_ev_enqueue_launch_start ? "launch" : "upload",
          (long) pi->async, (long) pi->async_queue);
}

static double nothing (size_t b, size_t e, const accshim_val *args, void *u)
{
  (void) b;
  (void) e;
  (void) args;
  (void) u;
  return 0;
}

/* An acc_async_noval upload and compute construct, then a wait for them. */
static void noval_work (void)
{
  acc_update_device_async (a, sizeof a, acc_async_noval);
  accshim_kernel k = { .name = "nothing", .work = 1, .host = nothing };
  ACC_PARALLEL (&k, 1, __LINE__, .async_ = acc_async_noval);
  acc_wait (acc_async_noval);
}

static void *other (void *arg)
{
  (void) arg;
  who = "other";
  printf ("other starts with %d\n", acc_get_default_async ());
  acc_set_default_async (7);
  printf ("other set %d\n", acc_get_default_async ());
  noval_work ();
  return NULL;
}

int main (void)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  who = "main";
  acc_prof_register (acc_ev_enqueue_upload_start, cb, acc_reg);
  acc_prof_register (acc_ev_enqueue_launch_start, cb, acc_reg);
  acc_copyin (a, sizeof a);
  acc_set_default_async (3);
  pthread_t t;
  pthread_create (&t, NULL, other, NULL);
  pthread_join (t, NULL);
  printf ("main after the other thread: %d\n", acc_get_default_async ());
  noval_work ();
  acc_shutdown (acc_device_default);
  printf ("main after acc_shutdown: %d\n", acc_get_default_async ());
  acc_init (acc_device_default);
  printf ("main after acc_init: %d\n", acc_get_default_async ());
  acc_copyin (a, sizeof a);
  noval_work ();
  /* acc_async_sync is an async argument too: acc_async_noval work then runs synchronously
     (GCC accepts it the same way). */
  acc_set_default_async (acc_async_sync);
  printf ("main set acc_async_sync: %d\n", acc_get_default_async ());
  noval_work ();
  printf ("done\n");
  return 0;
}
