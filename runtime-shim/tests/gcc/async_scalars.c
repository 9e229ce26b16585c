/* Async compute constructs in a loop: each maps the loop variable from the stack, which has
   changed by the time the queue runs the construct; the construct must see the value it had
   when it was enqueued (as libgomp copies it at once). */
#include <stdio.h>

int main (void)
{
  double a[256];
  for (int it = 0; it < 256; it++)
    {
#pragma acc parallel loop copyout(a[it:1]) async(1)
      for (int i = 0; i < 1; i++)
        a[it] = it * 2;
    }
#pragma acc wait
  double s = 0;
  for (int i = 0; i < 256; i++)
    s += a[i] * (i + 1);
  printf ("async scalars: %g\n", s);
  return 0;
}
