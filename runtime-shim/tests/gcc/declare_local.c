/* Function-local `acc declare`: a small table of weights copied in (as the OpenACC training
   lab's pipelined blur filter declares its filter) and a scratch array created on the device,
   in a function called several times with new weights. GCC maps the locals again on the
   compute constructs, where they are found present; it emits no release for the copyin, so
   each call's weights must still reach the device. */
#include <stdio.h>

#define N 4096

static void smooth (const double *in, double *out, int n, double centre)
{
  double w[3] = { 1.0, centre, 1.0 };
  double scratch[N];
#pragma acc declare copyin(w) create(scratch)
#pragma acc parallel loop present(in[0:n])
  for (int i = 1; i < n - 1; i++)
    scratch[i] = (w[0] * in[i - 1] + w[1] * in[i] + w[2] * in[i + 1]) / (w[0] + w[1] + w[2]);
#pragma acc parallel loop present(out[0:n])
  for (int i = 1; i < n - 1; i++)
    out[i] = scratch[i];
}

int main (void)
{
  static double a[N], b[N];
  for (int i = 0; i < N; i++)
    a[i] = (i % 17) * 0.5, b[i] = 0;
#pragma acc data copy(a, b)
  {
    for (int k = 1; k <= 3; k++)
      {
        smooth (a, b, N, 2.0 * k);
#pragma acc parallel loop present(a, b)
        for (int i = 1; i < N - 1; i++)
          a[i] = b[i];
      }
  }
  double s = 0;
  for (int i = 0; i < N; i++)
    s += b[i] * b[i] * (i % 5 + 1);
  printf ("smoothed: %.9f\n", s);
  return 0;
}
