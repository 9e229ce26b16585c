/* A halo's pack and fetch on one async queue, as miniWeather does it: a kernel on queue 1 writes
   a buffer, an update host of it is queued after it, and wait(1) must see the kernel's values on
   the host, for small and large buffers. Prints the number of wrong values and a checksum. */
#include <stdio.h>
#include <stdlib.h>

int main (void)
{
  int sizes[] = { 8, 1000, 100000, 1000000 };
  long bad = 0;
  double sum = 0;
  for (int s = 0; s < 4; s++)
    {
      int n = sizes[s];
      double *a = malloc (n * sizeof *a), *buf = malloc (n * sizeof *buf);
      for (int i = 0; i < n; i++)
        {
          a[i] = i;
          buf[i] = -1;
        }
#pragma acc data copyin(a[0:n]) create(buf[0:n])
      for (int it = 0; it < 4; it++)
        {
#pragma acc parallel loop present(a[0:n], buf[0:n]) async(1)
          for (int i = 0; i < n; i++)
            buf[i] = a[i] * 2 + it;
#pragma acc update host(buf[0:n]) async(1)
#pragma acc wait(1)
          for (int i = 0; i < n; i++)
            bad += buf[i] != a[i] * 2 + it;
          sum += buf[n - 1];
#pragma acc parallel loop present(a[0:n]) async(1)
          for (int i = 0; i < n; i++)
            a[i] += 1;
#pragma acc update host(a[0:n]) async(1)
#pragma acc wait
        }
      free (a);
      free (buf);
    }
  printf ("wrong %ld sum %.1f\n", bad, sum);
  return 0;
}
