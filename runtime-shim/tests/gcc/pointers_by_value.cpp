/* miniWeather's shape (mrnorman/miniWeather, c/miniWeather_mpi_openacc.cpp): arrays behind
   global pointers, present from a data region in main; kernels in other functions reach them
   through those globals and through pointer parameters with default(present) and async, which
   GCC passes to the kernel by value (firstprivate); output() brings the state back with
   `update host(...) async` and `wait`, mid-run. Prints the state's checksum after each output
   and at the end, and a device reduction beside the host's sum of the same values. */
#include <cstdio>
#include <cstdlib>

static const int n = 4096;
double *state, *state_tmp, *tend;
double *coef;

void tendencies (double *s, double *t)
{
#pragma acc parallel loop default(present) async
  for (int i = 0; i < n; i++)
    t[i] = coef[i] * (s[(i + 1) % n] - s[i]);
}

void step (double *init, double *out, double dt)
{
  tendencies (init, tend);
#pragma acc parallel loop default(present) async
  for (int i = 0; i < n; i++)
    out[i] = init[i] + dt * tend[i];
}

double output (int k)
{
#pragma acc update host(state[0:n]) async
#pragma acc wait
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += state[i] * (i % 7 + 1);
  std::printf ("output %d: %.12e\n", k, sum);
  return sum;
}

double device_sum ()
{
  double s = 0;
#pragma acc parallel loop reduction(+:s) default(present)
  for (int i = 0; i < n; i++)
    s += state[i] * (i % 7 + 1);
  return s;
}

int main ()
{
  state = new double[n];
  state_tmp = new double[n];
  tend = new double[n];
  coef = new double[n];
  for (int i = 0; i < n; i++)
    {
      state[i] = (i % 13) * 0.25;
      coef[i] = 1.0 + (i % 5) * 0.1;
    }
  double host_at_last_output = 0;
#pragma acc data copyin(coef[0:n]) create(state_tmp[0:n], tend[0:n]) copy(state[0:n])
  {
    host_at_last_output = output (0);
    for (int it = 1; it <= 20; it++)
      {
        step (state, state_tmp, 0.01);
        step (state_tmp, state, 0.02);
        if (it % 5 == 0)
          host_at_last_output = output (it);
      }
#pragma acc wait
    double d = device_sum ();
    std::printf ("device sum %.12e, host sum at the last output %.12e\n", d,
                 host_at_last_output);
  }
  double sum = 0;
  for (int i = 0; i < n; i++)
    sum += state[i];
  std::printf ("final %.12e\n", sum);
  return 0;
}
