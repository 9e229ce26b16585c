/* An array that shares a heap page with another thread's TLS vector (glibc allocates it on the
   heap when the thread is made, and malloc puts the array right after it), closed by the
   checker while the array's host copy is stale. The other thread then runs a directive: the
   runtime's thread-local variables are reached through that vector, so the thread faults on
   the closed page, in the runtime and in the checker's own fault handler. The program must
   finish as without the checker ("ok", no finding). */
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 16)

static sem_t go;

static void *other (void *arg)
{
  (void) arg;
  sem_wait (&go);
  int b[2] = { 1, 2 };
#pragma acc enter data copyin(b[0:2])
#pragma acc exit data delete(b[0:2])
  return NULL;
}

int main (void)
{
  /* The array from the heap, as after a large block was freed (glibc then raises this
     threshold by itself), right after the thread's TLS vector. */
  mallopt (M_MMAP_THRESHOLD, 64 << 20);
  sem_init (&go, 0, 0);
  pthread_t t;
  pthread_create (&t, NULL, other, NULL);
  double *x = malloc (N * sizeof *x);
  for (int i = 0; i < N; i++)
    x[i] = i;
#pragma acc data copy(x[0:N])
  {
#pragma acc parallel loop present(x[0:N])
    for (int i = 0; i < N; i++)
      x[i] *= 0.5;
    sem_post (&go);
    pthread_join (t, NULL);
  }
  printf ("ok %g\n", x[N - 1]);
  free (x);
  return 0;
}
