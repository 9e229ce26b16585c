/* A classic mistake: the array the kernel writes is only copied in, so on a GPU the host never
   sees the kernel's results. libgomp's host fallback shares the host's memory and hides it; a
   device with memory of its own shows what the GPU would. Prints the host's value after the
   kernel: 20 on a device with its own memory, 30 on shared memory. */
#include <stdio.h>
#include <stdlib.h>

int main (void)
{
  int n = 1000;
  double *a = malloc (n * sizeof *a), *b = malloc (n * sizeof *b);
  for (int i = 0; i < n; i++)
    {
      a[i] = i;
      b[i] = 2 * a[i];
    }
#pragma acc parallel loop copyin(a[0:n], b[0:n])
  for (int i = 0; i < n; i++)
    b[i] = 3 * a[i];
  printf ("b[10]=%g\n", b[10]);
  return 0;
}
