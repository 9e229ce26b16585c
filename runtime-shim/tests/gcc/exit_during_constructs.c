/* main returns while other threads are inside constructs: data regions, kernels, async
   copies and runtime routines, in a loop that never ends. The process must end with main's
   status and nothing on stderr, as on libgomp. Prints one line from main before it returns
   (kept in stdio's buffer until exit flushes it, as output to a pipe is). */
#include <openacc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4000

static void *worker (void *arg)
{
  int q = (int) (long) arg;
  double *a = malloc (N * sizeof *a), *b = malloc (N * sizeof *b);
  for (int i = 0; i < N; i++)
    a[i] = i;
  for (;;)
    {
#pragma acc data copyin(a[0:N]) copyout(b[0:N])
      {
#pragma acc parallel loop present(a[0:N], b[0:N]) async(q)
        for (int i = 0; i < N; i++)
          b[i] = 2 * a[i];
#pragma acc update host(b[0:N / 2]) async(q)
#pragma acc wait(q)
      }
      acc_copyin (a, N * sizeof *a);
      acc_delete (a, N * sizeof *a);
    }
  return NULL;
}

int main (void)
{
  pthread_t t[8];
  for (long i = 0; i < 8; i++)
    pthread_create (&t[i], NULL, worker, (void *) i);
  struct timespec d = { 0, 30 * 1000 * 1000 };
  nanosleep (&d, NULL);
  printf ("main returns\n");
  return 0;
}
