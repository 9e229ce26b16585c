/* Launch dimensions: constant ones (GCC compiles them into the nvptx image, where an offload
   compiler is installed) and one computed at run time (passed in GOACC_parallel_keyed's launch
   tags). */
#include <stdio.h>

int main (int argc, char **argv)
{
  double a[100];
  int g = 4 + argc; /* 5 */
#pragma acc parallel loop num_gangs(7) vector_length(64) copyout(a)
  for (int i = 0; i < 100; i++)
    a[i] = i;
#pragma acc parallel loop num_gangs(g) copy(a)
  for (int i = 0; i < 100; i++)
    a[i] += i;
  printf ("a[3]=%g\n", a[3]);
  return 0;
}
