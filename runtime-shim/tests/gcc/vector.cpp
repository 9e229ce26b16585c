// A g++ -fopenacc program: std::vector storage through pointers, a data region, a reduction.
#include <cstdio>
#include <vector>

int main ()
{
  const int n = 3000;
  std::vector<double> v (n), w (n, 0.0);
  for (int i = 0; i < n; i++)
    v[i] = i % 13;
  double *pv = v.data (), *pw = w.data ();
  double total = 0;
#pragma acc data copyin(pv[0:n]) copyout(pw[0:n])
  {
#pragma acc parallel loop present(pv[0:n], pw[0:n])
    for (int i = 0; i < n; i++)
      pw[i] = pv[i] * pv[i];
#pragma acc parallel loop present(pw[0:n]) reduction(+:total)
    for (int i = 0; i < n; i++)
      total += pw[i];
  }
  std::printf ("vector: total=%.1f w[12]=%.1f\n", total, w[12]);
  return 0;
}
