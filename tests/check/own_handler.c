/* A program with SIGSEGV handlers of its own, run under the checker: one installed before the
   first construct (so before the checker's), one after; both must see the program's own
   faults as they would without the checker, while the checker's guards are armed. The last
   fault is not handled: the program must die of SIGSEGV, as without the checker. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define N 4096
double a[N];
static sigjmp_buf back;
static volatile int caught;

static void on_segv (int sig)
{
  (void) sig;
  caught++;
  siglongjmp (back, 1);
}

static void fault_once (const char *when)
{
  if (sigsetjmp (back, 1) == 0)
    *(volatile int *) 16 = 1;
  printf ("%s: recovered (%d)\n", when, caught);
}

int main (int argc, char **argv)
{
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_segv;
  sigaction (SIGSEGV, &sa, NULL);
  fault_once ("before");
#pragma acc data copy(a)
  {
#pragma acc parallel loop present(a)
    for (int i = 0; i < N; i++)
      a[i] = i;
    /* The checker guards a's host copy here (a kernel changed it). */
    signal (SIGSEGV, on_segv);
    fault_once ("inside");
  }
  printf ("a[5] = %g\n", a[5]);
  if (argc > 1)
    {
      signal (SIGSEGV, SIG_DFL);
      *(volatile int *) 16 = 1;
    }
  return 0;
}
