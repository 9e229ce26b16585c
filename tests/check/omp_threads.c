/* OpenMP host threads each running OpenACC constructs on an array of their own: no finding
   ("ok"), or one thread reading its array's stale host copy inside the data region
   ("stale_host_read"), found at that line. The arrays take whole pages, so that no other
   thread's data shares a page with them (tls_neighbour.c is the case where it does). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 16)

static double work (int t, int bug)
{
  double *x = aligned_alloc (4096, N * sizeof *x);
  for (int i = 0; i < N; i++)
    x[i] = t + i;
#pragma acc data copy(x[0:N])
  {
    for (int it = 0; it < 3; it++)
      {
#pragma acc parallel loop present(x[0:N])
        for (int i = 0; i < N; i++)
          x[i] *= 0.5;
      }
    if (bug && t == 2)
      x[1] += x[5]; /* BUG:stale_host_read */
  }
  double r = x[N / 2];
  free (x);
  return r;
}

int main (int argc, char **argv)
{
  const char *which = argc > 1 ? argv[1] : "ok";
  int bug = !strcmp (which, "stale_host_read");
  double sum = 0;
#pragma omp parallel num_threads(4) reduction(+ : sum)
  sum += work (omp_get_thread_num (), bug);
  printf ("%s %g\n", which, sum);
  return 0;
}
