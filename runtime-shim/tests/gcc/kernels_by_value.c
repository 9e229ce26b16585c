/* The `kernels` shape of the OpenACC validation suite's kernels_default_present.c: arrays put on
   the device by enter data, then a kernels construct that reaches them through pointer variables
   (local and parameter), which GCC 12 maps into the construct themselves, 8 bytes
   force_tofrom (a parallel construct gets them firstprivate instead). The kernel must work on
   the device copies, and the host's pointers must be left as they were: prints what exit data
   copied back, and whether each pointer still holds the host's address. */
#include <stdio.h>
#include <stdlib.h>

static void scale (double *a, double *b, int n)
{
  double *a_in = a;
#pragma acc kernels default(present)
  {
#pragma acc loop
    for (int i = 0; i < n; i++)
      b[i] = 2.0 * a[i];
  }
  printf ("parameter pointer kept: %d\n", a == a_in);
}

int main (void)
{
  int n = 1000;
  double *a = malloc (n * sizeof *a), *b = malloc (n * sizeof *b);
  double *a0 = a, *b0 = b;
  for (int i = 0; i < n; i++)
    {
      a[i] = i;
      b[i] = 0;
    }
#pragma acc enter data copyin(a[0:n]) create(b[0:n])
#pragma acc kernels default(present)
  {
#pragma acc loop
    for (int i = 0; i < n; i++)
      b[i] = a[i] + 1;
  }
#pragma acc exit data copyout(b[0:n])
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += b[i];
  printf ("kernels local pointers: sum %.1f, kept %d %d\n", sum, a == a0, b == b0);

#pragma acc enter data create(b[0:n])
  scale (a, b, n);
#pragma acc exit data copyout(b[0:n]) delete(a[0:n])
  sum = 0;
  for (int i = 0; i < n; i++)
    sum += b[i];
  printf ("kernels parameter pointers: sum %.1f\n", sum);
  free (a);
  free (b);
  return 0;
}
