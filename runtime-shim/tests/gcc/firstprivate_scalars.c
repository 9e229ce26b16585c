/* A compute construct's scalars: GCC maps each firstprivate scalar as a copyin of the variable
   (or of a copy of it). They reach the kernel with its arguments: every size up to 8 bytes,
   an explicit firstprivate clause, a serial construct. Structs (copy, as aggregates are) and a
   scalar already on the device keep their device data. */
#include <stdio.h>

struct pair { float lo, hi; };
struct triple { int a, b, c; };

int main (void)
{
  enum { N = 1000 };
  static double x[N];
  char c = 3;
  short s = -7;
  int n = N;
  float f = 0.5f;
  double d = 1.25;
  long l = 1L << 40;
  struct pair p = { 2.0f, 4.0f };
  struct triple t = { 1, 2, 3 };
  double present_scale = 2.0;
#pragma acc enter data copyin(present_scale)
#pragma acc data copyout(x)
  {
#pragma acc parallel loop
    for (int i = 0; i < n; i++)
      x[i] = c + s + f * i + d + (double) (l >> 40) + p.lo * p.hi + t.a + t.b + t.c;
#pragma acc parallel loop firstprivate(d) present(present_scale)
    for (int i = 0; i < n; i++)
      x[i] = x[i] * present_scale + d;
#pragma acc serial
    x[0] = n + c;
  }
#pragma acc exit data delete(present_scale)
  double sum = 0;
  for (int i = 0; i < N; i++)
    sum += x[i];
  printf ("firstprivate scalars: %.2f %.2f\n", x[0], sum);
  return 0;
}
