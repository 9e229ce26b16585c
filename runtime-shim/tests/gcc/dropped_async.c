/* A copied-in array that a kernel on queue 2 changes, released by an exit data on queue 1 with
   no wait in between: the kernel's results are dropped (a missing copyout, in a program that
   also races). The runtime's "results dropped" check must look at the device copy after the
   work queued before the release, as the release's deferred free waits for it: on queue 1's
   order alone it looked before the kernel had written, and said nothing. A second array, only
   read on the device, must not be reported. */
#include <stdio.h>
#include <stdlib.h>

#define N 16384

int main (void)
{
  double *a = malloc (N * sizeof *a), *b = malloc (N * sizeof *b);
  for (int i = 0; i < N; i++)
    a[i] = b[i] = i;
#pragma acc enter data copyin(a[0:N], b[0:N])
#pragma acc parallel loop present(a[0:N], b[0:N]) async(2)
  for (int i = 0; i < N; i++)
    {
      double x = 0;
      for (int k = 0; k < 4000; k++)
        x = x * 0.5 + b[i];
      a[i] = x;
    }
#pragma acc exit data delete(a[0:N], b[0:N]) async(1)
#pragma acc wait
  printf ("a[1] = %g on the host\n", a[1]);
  free (a);
  free (b);
  return 0;
}
