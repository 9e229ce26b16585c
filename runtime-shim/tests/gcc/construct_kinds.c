/* kernels, parallel and serial constructs, which GCC lowers to the same call, and directives
   whose if clause is false, which run on the host. Prints a checksum. */
#include <stdio.h>

int main (int argc, char **argv)
{
  (void) argv;
  int n = 1000, off = argc > 5;
  double a[1000], s = 0;
  for (int i = 0; i < n; i++)
    a[i] = i;
#pragma acc kernels copy(a)
  for (int i = 0; i < n; i++)
    a[i] *= 2;
#pragma acc parallel loop copy(a)
  for (int i = 0; i < n; i++)
    a[i] += 1;
#pragma acc serial copy(a, s)
  for (int i = 0; i < n; i++)
    s += a[i];
#pragma acc parallel loop copy(a) if(off)
  for (int i = 0; i < n; i++)
    a[i] -= 1;
#pragma acc data copy(a) if(off)
  {
#pragma acc update self(a) if(off)
  }
  printf ("%.1f %.1f\n", s, a[n - 1]);
  return 0;
}
