/* A global under `acc declare`: host-fallback code reads the host's copy of it, so the shim
   cannot give the program a device copy of its own. It must stop with one line, before any
   result. */
#include <stdio.h>

static double g[100];
#pragma acc declare create(g)

int main (void)
{
#pragma acc parallel loop present(g)
  for (int i = 0; i < 100; i++)
    g[i] = i;
  printf ("g[5]=%g\n", g[5]);
  return 0;
}
