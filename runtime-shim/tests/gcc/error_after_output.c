/* A runtime error after the program has printed: output still in stdio's buffer (stdout is
   a pipe) must reach it, and the error must name the directive and its line. Argument: which
   directive fails (data that is not present). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main (int argc, char **argv)
{
  int n = 100;
  double *a = malloc (n * sizeof *a);
  for (int i = 0; i < n; i++)
    a[i] = i;
  printf ("before the error\n");
  if (argc > 1 && !strcmp (argv[1], "kernels"))
    {
#pragma acc kernels present(a[0:n])
      for (int i = 0; i < n; i++)
        a[i] += 1;
    }
  else
    {
#pragma acc update self(a[0:n])
    }
  printf ("after the error\n");
  return 0;
}
