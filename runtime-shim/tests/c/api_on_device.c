/* acc_on_device on the host and inside kernels of the emulated device, which are host
   functions run by the runtime: in a kernel it must answer as the device does (not_host and
   the device's own type true, host false), on every thread the kernel is split over, on the
   synchronous queue and on an async queue's thread. Prints one line per place:
   "<where> calls=<kernel calls> not_host=<n> host=<n> type=<n>", the counts being of
   iterations that got a true answer. */
#include <accshim.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 16) /* long enough to be split over the emulated device's threads */

static int calls;

static double probe (size_t b, size_t e, const accshim_val *a, void *u)
{
  (void) u;
  __atomic_fetch_add (&calls, 1, __ATOMIC_RELAXED);
  int *r = a[0].p;
  for (size_t i = b; i < e; i++)
    r[i] = acc_on_device (acc_device_not_host) | acc_on_device (acc_device_host) << 1
           | acc_on_device (acc_device_host_nonshm) << 2;
  return 0;
}

static void report (const char *where, const int *r, int n)
{
  int not_host = 0, host = 0, type = 0;
  for (int i = 0; i < n; i++)
    {
      not_host += r[i] & 1;
      host += (r[i] >> 1) & 1;
      type += (r[i] >> 2) & 1;
    }
  printf ("%s calls=%d not_host=%d host=%d type=%d\n", where, calls, not_host, host, type);
}

int main (void)
{
  static int r[N];
  /* Split kernels over 4 threads whatever the machine has. */
  setenv ("ACCSHIM_EMU_THREADS", "4", 1);
  setvbuf (stdout, NULL, _IONBF, 0);
  probe (0, 1, (const accshim_val[]){ { .p = r } }, NULL);
  calls = 0;
  report ("host", r, 1);
  accshim_arg args[] = { ACC_ARG_PRESENT (r) };
  accshim_kernel k = { .name = "probe", .work = N, .host = probe, .args = args, .nargs = 1 };
  ACC_PARALLEL (&k, 1, __LINE__, .clauses = (accshim_clause[]){ ACC_COPYOUT (r, 0, N) }, .nclauses = 1);
  report ("sync", r, N);
  calls = 0;
  ACC_PARALLEL (&k, 1, __LINE__, .clauses = (accshim_clause[]){ ACC_COPYOUT (r, 0, N) }, .nclauses = 1, .async_ = 1);
  acc_wait (1);
  report ("async", r, N);
  /* Back on the host after the kernels. */
  probe (0, 1, (const accshim_val[]){ { .p = r } }, NULL);
  calls = 0;
  report ("host again", r, 1);
  return 0;
}
