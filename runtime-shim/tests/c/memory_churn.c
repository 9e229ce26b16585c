/* Allocates and frees device memory argv[2] times (copyin, create, copyout, delete of arrays
   of argv[1], argv[1] and argv[1]/3 doubles, as a program with per-iteration copies does)
   and prints the resident memory after the first and the last round: the emulated device's
   freed blocks must be reused or given back, not pile up. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc_self.h"

int main (int argc, char **argv)
{
  if (argc != 3)
    {
      fprintf (stderr, "usage: %s ELEMENTS ROUNDS\n", argv[0]);
      return 2;
    }
  size_t n = strtoul (argv[1], NULL, 10), m = n / 3 + 1;
  int rounds = atoi (argv[2]);
  /* What is measured is the device memory; the results-dropped check's digests of every array
     copied in (4.7 s of CPU for 200 rounds in a debug build) would only slow it down. */
  setenv ("ACCSHIM_DROP_CHECK", "0", 1);
  double *a = calloc (n, sizeof *a), *b = calloc (n, sizeof *b), *c = calloc (m, sizeof *c);
  /* Touch every array once, so that the host side is resident from the start. */
  memset (a, 1, n * sizeof *a);
  memset (b, 1, n * sizeof *b);
  memset (c, 1, m * sizeof *c);
  for (int i = 0; i < rounds; i++)
    {
      acc_copyin (a, n * sizeof *a);
      acc_copyin (c, m * sizeof *c);
      acc_create (b, n * sizeof *b);
      acc_copyout (a, n * sizeof *a);
      acc_delete (b, n * sizeof *b);
      acc_delete (c, m * sizeof *c);
      if (i == 0)
        printf ("resident KiB after the first round: %ld\n", proc_status_kib ("VmRSS:"));
    }
  printf ("resident KiB after %d rounds: %ld\n", rounds, proc_status_kib ("VmRSS:"));
  return 0;
}
