/* Two launches of the same loop with different geometries, for accprof's launch-geometry view
 * (scripts/gpu-geometry.sh): `few_gangs` asks for 4 gangs, so 4 blocks run on a GPU of 100+
 * multiprocessors and most of it idles; `many_gangs` lets the compiler choose. The loop is
 * long enough (N elements, ITERS sweeps) that the difference shows in device time. */
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 24)

static float x[N], y[N];

static void few_gangs(int iters)
{
  for (int it = 0; it < iters; it++) {
#pragma acc parallel loop num_gangs(4) vector_length(128) present(x, y)
    for (int i = 0; i < N; i++)
      y[i] = 2.0f * x[i] + y[i];
  }
}

static void many_gangs(int iters)
{
  for (int it = 0; it < iters; it++) {
#pragma acc parallel loop vector_length(128) present(x, y)
    for (int i = 0; i < N; i++)
      y[i] = 2.0f * x[i] + y[i];
  }
}

int main(int argc, char **argv)
{
  int iters = argc > 1 ? atoi(argv[1]) : 5;
  for (int i = 0; i < N; i++) {
    x[i] = 1.0f;
    y[i] = 0.0f;
  }
#pragma acc data copyin(x) copy(y)
  {
    few_gangs(iters);
    many_gangs(iters);
  }
  printf("geometry y[0] = %.1f (expect %.1f)\n", y[0], 4.0f * iters);
  return y[0] == 4.0f * iters ? 0 : 1;
}
