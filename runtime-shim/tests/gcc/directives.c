/* A GCC-compiled OpenACC program that uses the directives as written by hand, with no accshim
   header: compute constructs (parallel, kernels, serial), reductions, data regions, enter/exit
   data, update, async and wait, host_data use_device, the acc_* routines beside directives, and
   several host threads. Every data clause it needs is there, so on libgomp's host fallback and on
   a device with memory of its own it prints the same lines. */
#include <openacc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096

static double checksum (const double *v, int n)
{
  double s = 0;
  for (int i = 0; i < n; i++)
    s += v[i] * (i % 7 + 1);
  return s;
}

static void scale_on_device (double *d, int n, double f)
{
  /* d is a device address (host_data use_device): deviceptr. */
#pragma acc parallel loop deviceptr(d)
  for (int i = 0; i < n; i++)
    d[i] *= f;
}

static void *worker (void *arg)
{
  int id = (int) (long) arg;
  double *v = malloc (N * sizeof *v);
  for (int i = 0; i < N; i++)
    v[i] = id + i;
#pragma acc data copy(v[0:N])
  {
    for (int it = 0; it < 10; it++)
      {
#pragma acc parallel loop present(v[0:N])
        for (int i = 0; i < N; i++)
          v[i] = v[i] * 0.5 + id;
      }
  }
  double *r = malloc (sizeof *r);
  *r = checksum (v, N);
  free (v);
  return r;
}

int main (void)
{
  int n = N;
  double *a = malloc (n * sizeof *a), *b = malloc (n * sizeof *b), *c = malloc (n * sizeof *c);
  for (int i = 0; i < n; i++)
    {
      a[i] = i * 0.25;
      b[i] = 0;
      c[i] = 1;
    }

  /* parallel loop with a reduction and firstprivate scalars */
  double k = 3.0, sum = 0, mx = -1;
#pragma acc parallel loop copyin(a[0:n]) copyout(b[0:n]) reduction(+:sum) reduction(max:mx)
  for (int i = 0; i < n; i++)
    {
      b[i] = k * a[i];
      sum += a[i];
      mx = a[i] > mx ? a[i] : mx;
    }
  printf ("parallel: sum=%.3f max=%.3f b=%.3f\n", sum, mx, checksum (b, n));

  /* a data region with kernels and serial inside, and an update in between */
#pragma acc data copy(a[0:n]) create(b[0:n])
  {
#pragma acc kernels
    for (int i = 0; i < n; i++)
      b[i] = a[i] + 1;
#pragma acc serial
    {
      for (int i = 0; i < n; i++)
        a[i] = b[i] * 2;
    }
#pragma acc update self(b[0:n])
    printf ("data: b=%.3f\n", checksum (b, n));
  }
  printf ("data: a=%.3f\n", checksum (a, n));

  /* enter/exit data, async queues and waits */
#pragma acc enter data copyin(c[0:n]) create(b[0:n])
#pragma acc parallel loop present(c[0:n], b[0:n]) async(1)
  for (int i = 0; i < n; i++)
    b[i] = c[i] * 2;
  /* Queue 2 changes c, which queue 1 reads: it waits for queue 1's kernel first (without the
     wait the two race, on a GPU as on the emulated device). */
#pragma acc parallel loop present(c[0:n]) async(2) wait(1)
  for (int i = 0; i < n; i++)
    c[i] += 5;
#pragma acc parallel loop present(c[0:n], b[0:n]) async(1) wait(2)
  for (int i = 0; i < n; i++)
    b[i] += c[i];
#pragma acc update self(b[0:n]) async(1)
#pragma acc wait(1)
  printf ("async: b=%.3f\n", checksum (b, n));

  /* host_data use_device, and acc_* routines mixed with directives */
#pragma acc host_data use_device(c)
  scale_on_device (c, n, 0.5);
  acc_copyin (a, n * sizeof *a);
#pragma acc parallel loop present(a[0:n], c[0:n])
  for (int i = 0; i < n; i++)
    a[i] += c[i];
  acc_copyout (a, n * sizeof *a);
  double *d = acc_malloc (n * sizeof *d);
  acc_memcpy_to_device (d, a, n * sizeof *d);
  scale_on_device (d, n, 2.0);
  acc_memcpy_from_device (a, d, n * sizeof *d);
  acc_free (d);
#pragma acc exit data copyout(c[0:n]) delete(b[0:n])
  printf ("api: a=%.3f c=%.3f\n", checksum (a, n), checksum (c, n));

  /* several host threads, each with its own data region */
  pthread_t t[3];
  for (long i = 0; i < 3; i++)
    pthread_create (&t[i], NULL, worker, (void *) i);
  for (int i = 0; i < 3; i++)
    {
      double *r;
      pthread_join (t[i], (void **) &r);
      printf ("thread %d: %.3f\n", i, *r);
      free (r);
    }
  free (a);
  free (b);
  free (c);
  return 0;
}
