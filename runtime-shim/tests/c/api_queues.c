/* The emulated device's async queues (argv[1] picks the case):
   "many" N      async copies on N distinct queue numbers, each waited for; prints the most
                 threads the process had: queue numbers are the program's to choose, and must
                 not cost a thread each (about 32k of them exhausted the system's threads).
   "shared"      all queues on one worker thread (ACCSHIM_EMU_QUEUE_THREADS=1): each keeps its
                 order, acc_async_test and acc_wait stay per queue, and waits between queues
                 (acc_wait_async) finish.
   "spawn_fails" no thread can start (the address space is limited after initialisation): the
                 first async operation is an OpenACC runtime error, not a panic. */
#include <accshim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "proc_self.h"

#define N 1024
static double x[N];

/* Adds 1 to every element, slowly: later work on its queue must wait for it. */
static double slow_inc (size_t b, size_t e, const accshim_val *a, void *u)
{
  (void) u;
  usleep (50000);
  double *p = a[0].p;
  for (size_t i = b; i < e; i++)
    p[i] += 1;
  return 0;
}

static void slow_inc_async (int q)
{
  accshim_arg args[] = { ACC_ARG_PRESENT (x) };
  accshim_kernel k = { .name = "slow_inc", .work = N, .host = slow_inc, .args = args, .nargs = 1 };
  ACC_PARALLEL (&k, 1, __LINE__, .async_ = q, .num_gangs = 1);
}

int main (int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";
  setvbuf (stdout, NULL, _IONBF, 0);
  for (int i = 0; i < N; i++)
    x[i] = 1;
  if (!strcmp (c, "many"))
    {
      int nq = argc > 2 ? atoi (argv[2]) : 1000, most = 0;
      acc_copyin (x, sizeof x);
      for (int i = 0; i < nq; i++)
        {
          acc_update_device_async (x, sizeof x, i);
          acc_wait (i);
          if (i % 100 == 0 && proc_threads () > most)
            most = proc_threads ();
        }
      acc_wait_all ();
      printf ("most threads %d\n", most);
    }
  else if (!strcmp (c, "shared"))
    {
      setenv ("ACCSHIM_EMU_QUEUE_THREADS", "1", 1);
      acc_copyin (x, sizeof x);
      /* Queue 1: slow kernel, then its copy back (done when the call returns, as CUDA's into
         pageable memory); queue 2 waits for queue 1, then queue 3 for queue 2, and the host
         for queue 3. */
      slow_inc_async (1);
      printf ("queue 1 busy: %d, queue 4 idle: %d\n", !acc_async_test (1), acc_async_test (4));
      acc_update_self_async (x, sizeof x, 1);
      acc_wait_async (1, 2);
      acc_wait_async (2, 3);
      acc_wait (3);
      printf ("after waiting for queue 3: x[0] = %g, queue 1 idle: %d\n", x[0], acc_async_test (1));
      /* Queue 6 waits for queue 5's kernel, then runs its own and the copy back. */
      slow_inc_async (5);
      acc_wait_async (5, 6);
      slow_inc_async (6);
      acc_update_self_async (x, sizeof x, 6);
      acc_wait (6);
      printf ("after both: x[0] = %g\n", x[0]);
    }
  else if (!strcmp (c, "spawn_fails"))
    {
      acc_copyin (x, sizeof x);
      /* Room for a little more heap, none for a thread's stack. */
      struct rlimit rl;
      getrlimit (RLIMIT_AS, &rl);
      rl.rlim_cur = (rlim_t) (proc_status_kib ("VmSize:") + 1024) * 1024;
      if (setrlimit (RLIMIT_AS, &rl))
        perror ("setrlimit");
      acc_update_device_async (x, sizeof x, 1);
      acc_wait (1);
      printf ("no error\n");
    }
  printf ("done\n");
  return 0;
}
