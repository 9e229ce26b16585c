/* Transfers whose count, size, direction and queue the directives fix: every array is 8000
   bytes (scalars move too, in a few bytes each). Expected array transfers:
   uploads: a at the data region's entry, a again by the update (queue 2), c at enter data;
   downloads: b at the data region's exit, c at exit data. */
#include <stdio.h>
#include <stdlib.h>

int main (void)
{
  int n = 1000;
  double *a = malloc (n * sizeof *a), *b = malloc (n * sizeof *b), *c = malloc (n * sizeof *c);
  for (int i = 0; i < n; i++)
    a[i] = i, b[i] = 0, c[i] = 1;
#pragma acc data copyin(a[0:n]) copyout(b[0:n])
  {
    for (int it = 0; it < 3; it++)
      {
#pragma acc parallel loop present(a[0:n], b[0:n])
        for (int i = 0; i < n; i++)
          b[i] = a[i] + it;
      }
    for (int i = 0; i < n; i++)
      a[i] = -a[i];
#pragma acc update device(a[0:n]) async(2)
#pragma acc wait(2)
#pragma acc parallel loop present(a[0:n], b[0:n])
    for (int i = 0; i < n; i++)
      b[i] += a[i];
  }
#pragma acc enter data copyin(c[0:n])
#pragma acc parallel loop present(c[0:n])
  for (int i = 0; i < n; i++)
    c[i] *= 4;
#pragma acc exit data copyout(c[0:n])
  printf ("b[10]=%g c[10]=%g\n", b[10], c[10]);
  return 0;
}
