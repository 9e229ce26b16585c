/* Members of a struct in data clauses: GCC maps them as one GOMP_MAP_STRUCT group (one device
   copy from the first member to the last, each member present on its own), the member
   pointer's target as data of its own, and attaches the pointer member on the device to it.
   present(f) needs every member of f on the device: the data construct maps them all. */
#include <stdio.h>
#include <stdlib.h>

struct field
{
  int n;
  double *v;
  double scale;
  double sum;
};

int main (void)
{
  struct field f = { 1000, malloc (1000 * sizeof (double)), 3.0, 0.0 };
  for (int i = 0; i < f.n; i++)
    f.v[i] = i;
#pragma acc parallel loop copy(f.v[0:f.n]) copyin(f.scale, f.n)
  for (int i = 0; i < f.n; i++)
    f.v[i] *= f.scale;
  double s = 0;
#pragma acc data copyin(f.v[0:f.n], f.n, f.scale) copyout(f.sum)
  {
#pragma acc parallel loop reduction(+:s) present(f.v[0:f.n])
    for (int i = 0; i < f.n; i++)
      s += f.v[i];
#pragma acc serial present(f)
    f.sum = s;
  }
  printf ("v[10]=%g s=%g sum=%g\n", f.v[10], s, f.sum);
  return 0;
}
