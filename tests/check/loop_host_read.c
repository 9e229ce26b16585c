/* The naive Laplace loop's shape (each construct copies the arrays in and out), with the host
   printing a value of A every few iterations: the data region `accprof advise` suggests needs
   an update self(A) before that read (argv[1] = 1), or is safe as it is (argv[1] = 0). */
#include <stdio.h>
#include <stdlib.h>

#define N 512
double A[N][N], Anew[N][N];

int main (int argc, char **argv)
{
  int show = argc > 1 ? atoi (argv[1]) : 1;
  for (int j = 0; j < N; j++)
    A[j][0] = 1;
  for (int it = 0; it < 8; it++)
    {
#pragma acc parallel loop
      for (int j = 1; j < N - 1; j++)
        for (int i = 1; i < N - 1; i++)
          Anew[j][i] = 0.25 * (A[j][i + 1] + A[j][i - 1] + A[j - 1][i] + A[j + 1][i]);
#pragma acc parallel loop
      for (int j = 1; j < N - 1; j++)
        for (int i = 1; i < N - 1; i++)
          A[j][i] = Anew[j][i];
      if (show && it % 4 == 3)
        printf ("iteration %d: %g\n", it, A[N / 2][1]); /* HOST_READ */
    }
  printf ("done %g\n", A[1][1]);
  return 0;
}
