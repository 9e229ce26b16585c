/* The cost of one call into the runtime: acc_is_present of present data, 2 million times,
   5 rounds (the lowest round is the figure). Build against a libaccshim.so:
     gcc -O2 -I runtime-shim/include runtime-shim/scripts/call_cost.c -o call_cost \
       -L DIR -laccshim -Wl,-rpath,DIR
   and run with ACCSHIM_QUIET=1; prints ns per call for each round. */
#include <openacc.h>
#include <stdio.h>
#include <time.h>

int main (void)
{
  static double a[16];
  acc_copyin (a, sizeof a);
  int n = 0;
  for (int r = 0; r < 5; r++)
    {
      struct timespec t0, t1;
      clock_gettime (CLOCK_MONOTONIC, &t0);
      for (int i = 0; i < 2000000; i++)
        n += acc_is_present (a, 8);
      clock_gettime (CLOCK_MONOTONIC, &t1);
      printf ("%.1f ns/call\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 2e6);
    }
  return n == 0;
}
