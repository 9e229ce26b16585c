// The C++ side of the checker's bug suite (see bugs.c): one seeded bug per run, named by
// argv[1], and correct runs ("ok_*"); the line of each bug is marked BUG: with its case.
#include <cstdio>
#include <cstring>

constexpr int N = 8192;
double u[N], v[N];

struct Field
{
  double *data;
  int n;
  // A member function whose kernel reaches the data through `this`: mapped by the caller.
  void scale (double f)
  {
    double *p = data;
#pragma acc parallel loop default(present) // BUG:host_memory_in_kernel
    for (int i = 0; i < n; i++)
      p[i] *= f;
  }
};

int main (int argc, char **argv)
{
  const char *which = argc > 1 ? argv[1] : "ok_region";
  for (int i = 0; i < N; i++)
    {
      u[i] = i;
      v[i] = 0;
    }
  double s = 0;
  if (!std::strcmp (which, "stale_host_read"))
    {
#pragma acc data copy(u)
      {
#pragma acc parallel loop present(u)
        for (int i = 0; i < N; i++)
          u[i] = 2 * u[i] + 1;
        for (int i = 0; i < N; i++)
          s += u[i]; // BUG:stale_host_read
      }
    }
  else if (!std::strcmp (which, "stale_device_read"))
    {
#pragma acc data copyin(u) copyout(v)
      {
        u[N / 2] = -1; // BUG:stale_device_read
#pragma acc parallel loop present(u, v)
        for (int i = 0; i < N; i++)
          v[i] = u[i];
      }
      s = v[N / 2];
    }
  else if (!std::strcmp (which, "results_dropped"))
    {
#pragma acc data copyin(u) // BUG:results_dropped
      {
#pragma acc parallel loop present(u)
        for (int i = 0; i < N; i++)
          u[i] += 10;
      }
      s = u[N - 1];
    }
  else if (!std::strcmp (which, "host_memory_in_kernel"))
    {
      Field f{u, N};
#pragma acc data copy(u)
      f.scale (3);
      s = u[5];
    }
  else if (!std::strcmp (which, "leak_at_exit"))
    {
#pragma acc enter data copyin(v) // BUG:leak_at_exit
#pragma acc parallel loop present(v)
      for (int i = 0; i < N; i++)
        v[i] += i;
#pragma acc update self(v)
      s = v[3];
    }
  else if (!std::strcmp (which, "redundant_transfer"))
    {
#pragma acc data copy(u, v)
      {
#pragma acc parallel loop present(u, v)
        for (int i = 0; i < N; i++)
          v[i] -= u[i];
#pragma acc update device(u) // BUG:redundant_transfer
#pragma acc parallel loop present(u, v)
        for (int i = 0; i < N; i++)
          v[i] += u[i];
      }
      s = v[3];
    }
  else if (!std::strcmp (which, "unused_transfer"))
    {
      for (int it = 0; it < 2; it++)
        {
#pragma acc parallel loop copyout(v) copyin(u) // BUG:unused_transfer
          for (int i = 0; i < N; i++)
            v[i] = u[i] * it;
#pragma acc parallel loop copy(v)
          for (int i = 0; i < N; i++)
            v[i] += 1;
        }
      s = v[3];
    }
  else if (!std::strcmp (which, "unused_upload"))
    {
      // The kernel only writes v: the copy in of v was for nothing (copyout would do).
#pragma acc parallel loop copyin(u) copy(v) // BUG:unused_upload
      for (int i = 0; i < N; i++)
        v[i] = u[i] + 1;
      s = v[3];
    }
  else if (!std::strcmp (which, "ok_region"))
    {
#pragma acc data copyin(u) copyout(v)
      {
        for (int it = 0; it < 3; it++)
          {
#pragma acc parallel loop present(u, v)
            for (int i = 0; i < N; i++)
              v[i] = u[i] + it;
          }
      }
      s = v[7];
    }
  else if (!std::strcmp (which, "ok_async"))
    {
#pragma acc data copyin(u) create(v)
      {
#pragma acc parallel loop present(u, v) async(3)
        for (int i = 0; i < N; i++)
          v[i] = u[i] * 3;
#pragma acc update self(v) async(3)
#pragma acc wait(3)
        s = v[9];
      }
    }
  else
    {
      std::fprintf (stderr, "unknown case %s\n", which);
      return 2;
    }
  std::printf ("%s %g\n", which, s);
  return 0;
}
