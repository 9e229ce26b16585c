/* Children forked while other threads run constructs: each child maps, computes and waits on
   an async queue itself, and must finish. A lock another thread held at the fork, or a queue
   whose worker thread the child does not have, would hang it (the alarm ends a hung child). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 100
static volatile int stop;

static void *spin (void *arg)
{
  long q = (long) arg;
  double a[256];
  for (int i = 0; i < 256; i++)
    a[i] = i;
  while (!stop)
    {
#pragma acc parallel loop copy(a) async(q)
      for (int i = 0; i < 256; i++)
        a[i] += 1;
#pragma acc parallel loop copy(a)
      for (int i = 0; i < 256; i++)
        a[i] -= 1;
#pragma acc wait(q)
    }
  return 0;
}

int main (void)
{
  double b[64];
  for (int i = 0; i < 64; i++)
    b[i] = i;
#pragma acc enter data copyin(b)
  pthread_t t[3];
  for (long j = 0; j < 3; j++)
    pthread_create (&t[j], 0, spin, (void *) j);
  int hung = 0, failed = 0;
  for (int k = 0; k < CHILDREN; k++)
    {
      pid_t p = fork ();
      if (p == 0)
        {
          alarm (3);
          double c[64];
#pragma acc parallel loop present(b) copyout(c) async(1)
          for (int i = 0; i < 64; i++)
            c[i] = 2 * b[i];
#pragma acc wait(1)
          _exit (c[10] == 20 ? 0 : 3);
        }
      int st;
      waitpid (p, &st, 0);
      if (WIFSIGNALED (st) && WTERMSIG (st) == SIGALRM)
        hung++;
      else if (!WIFEXITED (st) || WEXITSTATUS (st) != 0)
        failed++;
      if (hung)
        break; /* one is enough to know */
    }
  stop = 1;
  for (int j = 0; j < 3; j++)
    pthread_join (t[j], 0);
#pragma acc exit data delete(b)
  printf ("children: %d hung, %d failed\n", hung, failed);
  return 0;
}
