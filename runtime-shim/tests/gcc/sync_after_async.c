/* Results read without the wait the specification requires, as the OpenACC validation suite's
   acc_copyin_async.c, acc_delete_async.c and serial_loop_async.F90 read them: kernels queued on
   async queues write arrays that a synchronous directive or routine then copies back (a data
   region's end, exit data, acc_copyout, update self) or a synchronous kernel reads, with no
   wait in between. By the specification the program races; with libgomp on a GPU the
   synchronous copies and kernels run on CUDA's legacy default stream, which waits for the work
   queued on the async queues' streams, so it gets the kernels' results, and so must the shim.
   Last, an async copy into host memory that the host writes right after the call (update self
   async, then a store): CUDA copies into pageable memory before the call returns, so the
   store stays. Prints how many values are wrong in each case. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>

#define N 16384

/* A kernel slow enough to still run when the host goes on. */
static void slow_fill (double *a, double v, int q)
{
#pragma acc parallel loop present(a[0:N]) async(q)
  for (int i = 0; i < N; i++)
    {
      double x = 0;
      for (int k = 0; k < 4000; k++)
        x = x * 0.5 + v / 2;
      a[i] = x + i;
    }
}

static long wrong (const double *a, double v)
{
  long bad = 0;
  for (int i = 0; i < N; i++)
    bad += a[i] != v + i;
  return bad;
}

int main (void)
{
  double *a = malloc (N * sizeof *a), *b = malloc (N * sizeof *b);
  for (int i = 0; i < N; i++)
    a[i] = b[i] = 0;

#pragma acc data copyout(a[0:N], b[0:N])
  {
    slow_fill (a, 1, 1);
    slow_fill (b, 2, 2);
  }
  printf ("data region end: %ld %ld wrong\n", wrong (a, 1), wrong (b, 2));

#pragma acc enter data create(a[0:N])
  slow_fill (a, 3, 1);
#pragma acc exit data copyout(a[0:N])
  printf ("exit data copyout: %ld wrong\n", wrong (a, 3));

#pragma acc enter data create(a[0:N])
  slow_fill (a, 4, 3);
  acc_copyout (a, N * sizeof *a);
  printf ("acc_copyout: %ld wrong\n", wrong (a, 4));

#pragma acc enter data create(a[0:N], b[0:N])
  slow_fill (a, 5, 1);
#pragma acc update self(a[0:N])
  printf ("update self: %ld wrong\n", wrong (a, 5));
  slow_fill (a, 6, 2);
#pragma acc parallel loop present(a[0:N], b[0:N])
  for (int i = 0; i < N; i++)
    b[i] = a[i] + 1;
#pragma acc exit data copyout(b[0:N]) delete(a[0:N])
  printf ("synchronous kernel: %ld wrong\n", wrong (b, 7));

#pragma acc enter data copyin(a[0:N])
  slow_fill (a, 8, 1);
#pragma acc update self(a[0:N]) async(1)
  a[0] = -1;
#pragma acc wait(1)
  printf ("store after update self async: %s\n", a[0] == -1 ? "kept" : "overwritten");
#pragma acc exit data delete(a[0:N])
  free (a);
  free (b);
  return 0;
}
