/* Globals under `acc declare`: present on the device for the whole run, with the device's own
   copies. GCC leaves them out of every directive's map (its compute code names them directly),
   so only kernels and the acc_update_* routines move them, and an update directive naming one
   moves nothing. A GPU keeps the two copies apart; libgomp's host fallback shares them, so the
   lines marked [discrete] differ from its output. */
#include <openacc.h>
#include <stdio.h>

#define N 1000

static double coef[4] = { 1.0, 2.0, 3.0, 4.0 };
#pragma acc declare copyin(coef)
double table[N];
#pragma acc declare create(table)
double resident[N];
#pragma acc declare device_resident(resident)
double linked[N];
#pragma acc declare link(linked)

static double sum (const double *a)
{
  double s = 0;
  for (int i = 0; i < N; i++)
    s += a[i];
  return s;
}

int main (void)
{
  static double out[N];
#pragma acc parallel loop
  for (int i = 0; i < N; i++)
    {
      table[i] = coef[i % 4] * i;
      resident[i] = 2.0 * i;
    }
#pragma acc parallel loop copyout(out)
  for (int i = 0; i < N; i++)
    out[i] = table[i] + resident[i];
  printf ("out: %.1f\n", sum (out));
  printf ("host table before acc_update_self: %.1f [discrete]\n", sum (table));
  acc_update_self (table, sizeof table);
  printf ("host table after acc_update_self: %.1f\n", sum (table));
  printf ("host resident: %.1f [discrete]\n", sum (resident));

  /* The host's copy changes; the device's keeps its initializer until acc_update_device. */
  coef[0] = 100.0;
#pragma acc parallel loop copyout(out)
  for (int i = 0; i < N; i++)
    out[i] = coef[i % 4];
  printf ("device coef before acc_update_device: %.1f [discrete]\n", sum (out));
  acc_update_device (coef, sizeof coef);
#pragma acc parallel loop copyout(out)
  for (int i = 0; i < N; i++)
    out[i] = coef[i % 4];
  printf ("device coef after acc_update_device: %.1f\n", sum (out));

  /* link: data like any other, mapped by the clauses. */
  for (int i = 0; i < N; i++)
    linked[i] = i;
#pragma acc data copy(linked)
  {
#pragma acc parallel loop
    for (int i = 0; i < N; i++)
      linked[i] += table[i];
  }
  printf ("linked: %.1f\n", sum (linked));

  /* GCC passes no variable here: nothing is copied (the shim says so). */
#pragma acc update self(resident)
  printf ("host resident after update self: %.1f [discrete]\n", sum (resident));
  return 0;
}
