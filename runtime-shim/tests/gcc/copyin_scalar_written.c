/* A kernel writes a scalar the construct only copies in: GCC maps it as it maps a firstprivate
   scalar, so the write is lost with the device copy, as on a GPU. */
#include <stdio.h>

int main (void)
{
  int x = 0;
  double a[100];
  for (int i = 0; i < 100; i++)
    a[i] = i;
#pragma acc parallel copyin(x) copy(a)
  {
    x = 5;
    a[0] = x;
  }
  printf ("x=%d a[0]=%g\n", x, a[0]);
  return 0;
}
