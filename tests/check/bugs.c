/* One seeded data-clause bug per run (argv[1] names it), and correct programs ("ok_*") that
   use data regions, updates and async queues: accprof check must find each bug with its kind,
   array and line (the line marked BUG: with the case's name), and nothing in the correct ones.
   The arrays are global, so that they have their source names without debug information;
   the "small_" cases use arrays of a few KiB from malloc, which share their first and last
   pages with each other and with malloc's own headers. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 8192
double a[N], b[N], c[N];
int count;

static void init (void)
{
  for (int i = 0; i < N; i++)
    {
      a[i] = i;
      b[i] = 1;
      c[i] = 0;
    }
}

/* A function taking a pointer the kernel uses: GCC passes it by value. */
static void scale (double *p, int n)
{
#pragma acc parallel loop default(present) /* BUG:host_memory_in_kernel */
  for (int i = 0; i < n; i++)
    p[i] *= 2;
}

/* A second kernel given the same pointer by value: the same cause as scale's. */
static void shift (double *p, int n)
{
#pragma acc parallel loop default(present) /* BUG:by_value_again */
  for (int i = 0; i < n; i++)
    p[i] += 1;
}

/* A stack array the host changes inside a data region: no guard can watch a stack, so only the
   comparison of the two copies when the kernel starts sees it. */
static double stack_stale (void)
{
  double w[N];
  for (int i = 0; i < N; i++)
    w[i] = i;
  double s = 0;
#pragma acc data copyin(w) /* BUG:stack_stale_device_read */
  {
    for (int i = 0; i < N; i++)
      w[i] = 2 * i;
#pragma acc parallel loop present(w) reduction(+:s)
    for (int i = 0; i < N; i++)
      s += w[i];
  }
  return s;
}

/* A stack array that kernels on ten async queues change at once, each its own row: the device
   copy changes under the other queues' kernels while one starts, which is no host change. */
static double async_stack (void)
{
  double w[10][512];
  for (int q = 0; q < 10; q++)
    for (int i = 0; i < 512; i++)
      w[q][i] = q;
#pragma acc data copy(w)
  {
    for (int q = 0; q < 10; q++)
      {
#pragma acc parallel loop async(q) present(w)
        for (int i = 0; i < 512; i++)
          w[q][i] += i;
#pragma acc parallel loop async(q) present(w)
        for (int i = 0; i < 512; i++)
          w[q][i] *= 2;
      }
#pragma acc wait
  }
  double s = 0;
  for (int q = 0; q < 10; q++)
    s += w[q][511];
  return s;
}

int main (int argc, char **argv)
{
  const char *which = argc > 1 ? argv[1] : "ok_region";
  double s = 0;
  init ();
  if (!strcmp (which, "stale_host_read"))
    {
#pragma acc data copy(a)
      {
#pragma acc parallel loop present(a)
        for (int i = 0; i < N; i++)
          a[i] += 1;
        s = a[100]; /* BUG:stale_host_read */
      }
    }
  else if (!strcmp (which, "stale_device_read"))
    {
#pragma acc data copyin(a) copyout(b)
      {
        for (int i = 0; i < N; i++)
          a[i] *= 2; /* BUG:stale_device_read */
#pragma acc parallel loop present(a, b)
        for (int i = 0; i < N; i++)
          b[i] = a[i];
      }
      s = b[100];
    }
  else if (!strcmp (which, "results_dropped"))
    {
#pragma acc parallel loop copyin(a) /* BUG:results_dropped */
      for (int i = 0; i < N; i++)
        a[i] = -a[i];
      s = a[100];
    }
  else if (!strcmp (which, "scalar_dropped"))
    {
      /* GCC maps a copied-in scalar as it maps a firstprivate one. */
#pragma acc parallel copyin(count) copy(a) /* BUG:scalar_dropped */
      {
        count = 5;
        a[0] = count;
      }
      s = count + a[0];
    }
  else if (!strcmp (which, "host_memory_in_kernel"))
    {
#pragma acc data copy(a)
      scale (a, N);
      s = a[100];
    }
  else if (!strcmp (which, "by_value_twice"))
    {
#pragma acc data copy(a)
      {
        scale (a, N);
        shift (a, N);
        scale (a, N);
      }
      s = a[100];
    }
  else if (!strcmp (which, "dropped_unwatched"))
    {
      /* Scratch results on the stack (no page guard sees the host's reads) dropped on
         purpose: a warning that says so, not an error. */
      double t[64];
      for (int i = 0; i < 64; i++)
        t[i] = i;
#pragma acc parallel loop copyin(t) /* BUG:dropped_unwatched */
      for (int i = 0; i < 64; i++)
        t[i] *= 2;
      s = 1;
    }
  else if (!strcmp (which, "async_stale"))
    {
      /* Two kernels at once on two queues, each changing its own array: the stale read of c
         is the kernel on queue 2's, not the one running beside it. */
#pragma acc data copy(a, c)
      {
#pragma acc parallel loop present(a) async(1)
        for (int i = 0; i < N; i++)
          a[i] += 1;
#pragma acc parallel loop present(c) async(2) /* BUG:async_kernel_c */
        for (int i = 0; i < N; i++)
          c[i] += 1;
#pragma acc wait
        s = c[100]; /* BUG:async_stale */
      }
    }
  else if (!strcmp (which, "no_construct"))
    s = 1;
  else if (!strcmp (which, "leak_at_exit"))
    {
#pragma acc enter data copyin(a) /* BUG:leak_at_exit */
#pragma acc parallel loop present(a) reduction(+:s)
      for (int i = 0; i < N; i++)
        s += a[i];
    }
  else if (!strcmp (which, "redundant_transfer"))
    {
#pragma acc parallel loop copy(a, b) /* BUG:redundant_transfer */
      for (int i = 0; i < N; i++)
        b[i] += a[i] + 1;
      s = b[100];
    }
  else if (!strcmp (which, "api_leak_at_exit"))
    {
      /* The runtime routine, not the directive: reported at its call. */
      acc_copyin (a, sizeof a); /* BUG:api_leak_at_exit */
#pragma acc parallel loop present(a) reduction(+:s)
      for (int i = 0; i < N; i++)
        s += a[i];
    }
  else if (!strcmp (which, "redundant_copyout"))
    {
      /* The kernel only reads a: exit data's copy back brings nothing new. */
#pragma acc enter data copyin(a)
#pragma acc parallel loop present(a) reduction(+:s)
      for (int i = 0; i < N; i++)
        s += a[i];
#pragma acc exit data copyout(a) /* BUG:redundant_copyout */
    }
  else if (!strcmp (which, "unused_transfer"))
    {
      for (int it = 0; it < 3; it++)
        {
#pragma acc parallel loop copyin(a) copy(b) /* BUG:unused_transfer */
          for (int i = 0; i < N; i++)
            b[i] += a[i];
        }
      s = b[100];
    }
  else if (!strcmp (which, "unused_upload"))
    {
#pragma acc parallel loop copyin(a) copy(b) /* BUG:unused_upload */
      for (int i = 0; i < N; i++)
        b[i] = 2 * a[i];
      s = b[100];
    }
  else if (!strcmp (which, "small_stale_host_read"))
    {
      int m = 384;
      double *p = malloc (m * sizeof *p), *q = malloc (m * sizeof *q);
      for (int i = 0; i < m; i++)
        p[i] = q[i] = i;
#pragma acc data copy(p[0:m], q[0:m])
      {
#pragma acc parallel loop present(p[0:m], q[0:m])
        for (int i = 0; i < m; i++)
          q[i] += p[i];
        s = q[m - 1]; /* BUG:small_stale_host_read */
      }
      free (p);
      free (q);
    }
  else if (!strcmp (which, "ok_async_stack"))
    s = async_stack ();
  else if (!strcmp (which, "stack_stale_device_read"))
    s = stack_stale ();
  else if (!strcmp (which, "small_stale_device_read"))
    {
      int m = 640;
      double *p = malloc (m * sizeof *p), *q = malloc (m * sizeof *q);
      for (int i = 0; i < m; i++)
        p[i] = q[i] = i;
#pragma acc data copyin(p[0:m]) copy(q[0:m])
      {
        p[0] = -1; /* BUG:small_stale_device_read */
#pragma acc parallel loop present(p[0:m], q[0:m])
        for (int i = 0; i < m; i++)
          q[i] += p[i];
      }
      s = q[0];
      free (p);
      free (q);
    }
  else if (!strcmp (which, "ok_small"))
    {
      /* Correct use of small arrays side by side, with the host busy on their neighbours
         (an unmapped array between them, malloc and free) while they are on the device. */
      int m = 400;
      double *p = malloc (m * sizeof *p), *w = malloc (m * sizeof *w),
             *q = malloc (m * sizeof *q);
      for (int i = 0; i < m; i++)
        p[i] = q[i] = w[i] = i;
#pragma acc data copy(p[0:m], q[0:m])
      {
        for (int it = 0; it < 3; it++)
          {
#pragma acc parallel loop present(p[0:m], q[0:m])
            for (int i = 0; i < m; i++)
              q[i] += p[i];
            for (int i = 0; i < m; i++)
              w[i] += 1;
            free (malloc (100));
#pragma acc update self(q[0:m])
            s += q[m / 2] + w[0];
            p[1] = s;
#pragma acc update device(p[0:m])
          }
      }
      s += p[1] + q[2];
      free (p);
      free (w);
      free (q);
    }
  else if (!strcmp (which, "ok_scratch"))
    {
      /* Scratch arrays from malloc changed on the device and never read back, released while
         the host maps a block that needs a fresh look at its memory map (mmap'ed by malloc):
         no finding, as the host never reads the lost values. */
      int m = 10000;
      double *p = malloc (m * sizeof *p), *q = malloc (m * sizeof *q);
      for (int i = 0; i < m; i++)
        p[i] = q[i] = i;
#pragma acc data copyin(p[0:m], q[0:m])
      {
#pragma acc parallel loop present(p[0:m], q[0:m])
        for (int i = 0; i < m; i++)
          {
            p[i] += q[i];
            q[i] *= 2;
          }
        int big = 1 << 20;
        double *r = malloc (big * sizeof *r);
        for (int i = 0; i < big; i++)
          r[i] = 1;
#pragma acc parallel loop copy(r[0:big])
        for (int i = 0; i < big; i++)
          r[i] += 1;
        s = r[big - 1];
        free (r);
      }
      free (p);
      free (q);
    }
  else if (!strcmp (which, "ok_region"))
    {
#pragma acc data copy(a) create(b)
      {
        for (int it = 0; it < 4; it++)
          {
#pragma acc parallel loop present(a, b)
            for (int i = 0; i < N; i++)
              b[i] = a[i] * 0.5;
#pragma acc parallel loop present(a, b)
            for (int i = 0; i < N; i++)
              a[i] = b[i] + 1;
          }
      }
      s = a[100];
    }
  else if (!strcmp (which, "ok_updates"))
    {
#pragma acc data copyin(a) create(b)
      {
#pragma acc parallel loop present(a, b)
        for (int i = 0; i < N; i++)
          b[i] = a[i] * 2;
#pragma acc update self(b)
        s = b[100];
        for (int i = 0; i < N; i++)
          a[i] = b[i] + 1;
#pragma acc update device(a)
#pragma acc parallel loop present(a, b)
        for (int i = 0; i < N; i++)
          b[i] = a[i];
#pragma acc update self(b)
      }
      s += b[7];
    }
  else if (!strcmp (which, "ok_async"))
    {
#pragma acc enter data copyin(a, c)
      for (int it = 0; it < 4; it++)
        {
#pragma acc parallel loop present(a) async(1)
          for (int i = 0; i < N; i++)
            a[i] += 1;
#pragma acc parallel loop present(c) async(2)
          for (int i = 0; i < N; i++)
            c[i] += 2;
        }
#pragma acc update self(a) async(1)
#pragma acc update self(c) async(2)
#pragma acc wait
      s = a[100] + c[100];
#pragma acc exit data delete(a, c)
    }
  else
    {
      fprintf (stderr, "unknown case %s\n", which);
      return 2;
    }
  printf ("%s %g\n", which, s);
  return 0;
}
