/* Initialises and shuts the device down argv[1] times (default 20), copying two arrays of
   argv[2] doubles (default 1000) on two async queues each time, and prints the process's
   thread count and resident memory after the first and after the last cycle: each shutdown
   must end the threads its queues (and staging buffers) started and free what it allocated.
   The test runs it on the emulated device; scripts/gpu runs it on the CUDA backend with
   arrays large enough to be staged. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc_self.h"

int main (int argc, char **argv)
{
  int cycles = argc > 1 ? atoi (argv[1]) : 20;
  size_t n = argc > 2 ? strtoul (argv[2], NULL, 10) : 1000;
  double *a = calloc (n, sizeof *a), *b = calloc (n, sizeof *b);
  for (int i = 0; i < cycles; i++)
    {
      acc_init (acc_device_default);
      acc_copyin_async (a, n * sizeof *a, 1);
      acc_copyin_async (b, n * sizeof *b, 2);
      acc_wait_all ();
      acc_copyout (a, n * sizeof *a);
      acc_delete (b, n * sizeof *b);
      acc_shutdown (acc_device_default);
      if (i == 0)
        printf ("threads after the first cycle: %d\nresident KiB after the first cycle: %ld\n",
                proc_threads (), proc_status_kib ("VmRSS:"));
    }
  printf ("threads after %d cycles: %d\nresident KiB after %d cycles: %ld\n", cycles, proc_threads (),
          cycles, proc_status_kib ("VmRSS:"));
  free (a);
  free (b);
  return 0;
}
