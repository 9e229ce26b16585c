/* Device copies released while an async kernel still writes them: a data region ends, or an
   exit data deletes the array, right after `parallel ... async(1)` was launched on it, without
   waiting (a race in the program: the kernel's results are lost). The runtime must keep that
   memory for the kernel until it is done, as a GPU's driver does: another array mapped at once
   (same size, so a pool would hand out the same block) keeps its own values. Prints how many
   values of that other array are wrong after each case, and of what the program copied back. */
#include <stdio.h>
#include <stdlib.h>

#define N 16384

/* A kernel slow enough to still run when the host maps the next array. */
static void slow_fill (double *a, double v)
{
#pragma acc parallel loop present(a[0:N]) async(1)
  for (int i = 0; i < N; i++)
    {
      double x = 0;
      for (int k = 0; k < 4000; k++)
        x = x * 0.5 + v;
      a[i] = x;
    }
}

static long check (double *b, double want)
{
  long bad = 0;
#pragma acc update host(b[0:N])
  for (int i = 0; i < N; i++)
    bad += b[i] != want;
  return bad;
}

int main (void)
{
  double *a = malloc (N * sizeof *a), *b = malloc (N * sizeof *b);
  for (int i = 0; i < N; i++)
    a[i] = b[i] = 0;

  /* A structured region ends under the kernel. */
#pragma acc data copyin(a[0:N])
  slow_fill (a, 1.0);
  for (int i = 0; i < N; i++)
    b[i] = 7;
#pragma acc data copyin(b[0:N])
  {
#pragma acc wait(1)
    printf ("region end: %ld wrong\n", check (b, 7));
  }

  /* An exit data deletes it under the kernel. */
#pragma acc enter data copyin(a[0:N])
  slow_fill (a, 3.0);
#pragma acc exit data delete(a[0:N])
  for (int i = 0; i < N; i++)
    b[i] = 9;
#pragma acc enter data copyin(b[0:N])
#pragma acc wait(1)
  printf ("exit data: %ld wrong\n", check (b, 9));
#pragma acc exit data delete(b[0:N])
  free (a);
  free (b);
  return 0;
}
