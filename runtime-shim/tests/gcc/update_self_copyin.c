/* Arrays only copied in whose device results the program fetches with update self: nothing is
   dropped when the update covers every change, so no missing-copyout warning; the array changed
   again after its last update self (c) is dropped, as on a GPU, and warned about. Prints the
   host's sums. */
#include <stdio.h>
#include <stdlib.h>

int main (void)
{
  int n = 1000;
  double *a = malloc (n * sizeof *a), *b = malloc (n * sizeof *b), *c = malloc (n * sizeof *c);
  for (int i = 0; i < n; i++)
    a[i] = b[i] = c[i] = i;
#pragma acc data copyin(a[0:n], b[0:n], c[0:n])
  {
#pragma acc parallel loop present(a[0:n], b[0:n], c[0:n]) async(1)
    for (int i = 0; i < n; i++)
      {
        a[i] += 1;
        b[i] += 2;
        c[i] += 3;
      }
#pragma acc update self(a[0:n], c[0:n]) async(1)
#pragma acc wait(1)
#pragma acc update self(b[0:n])
#pragma acc parallel loop present(c[0:n])
    for (int i = 0; i < n; i++)
      c[i] += 100;
  }
  double sa = 0, sb = 0, sc = 0;
  for (int i = 0; i < n; i++)
    {
      sa += a[i];
      sb += b[i];
      sc += c[i];
    }
  printf ("a=%g b=%g c=%g\n", sa, sb, sc);
  free (a);
  free (b);
  free (c);
  return 0;
}
