/* Initialises and shuts the device down argv[1] times, using two async queues each time, and
   prints the process's thread count after the first and after the last cycle: each shutdown
   must end the threads its queues started. */
#include <openacc.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

static int threads (void)
{
  int n = 0;
  DIR *d = opendir ("/proc/self/task");
  struct dirent *e;
  while ((e = readdir (d)))
    if (e->d_name[0] != '.')
      n++;
  closedir (d);
  return n;
}

int main (int argc, char **argv)
{
  int cycles = argc > 1 ? atoi (argv[1]) : 20;
  static double a[1000], b[1000];
  for (int i = 0; i < cycles; i++)
    {
      acc_init (acc_device_default);
      acc_copyin_async (a, sizeof a, 1);
      acc_copyin_async (b, sizeof b, 2);
      acc_wait_all ();
      acc_delete (a, sizeof a);
      acc_delete (b, sizeof b);
      acc_shutdown (acc_device_default);
      if (i == 0)
        printf ("threads after the first cycle: %d\n", threads ());
    }
  printf ("threads after %d cycles: %d\n", cycles, threads ());
  return 0;
}
