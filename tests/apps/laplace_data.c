/* Laplace 2-D Jacobi with a structured data region around the convergence
 * loop: copy(A) create(Anew), so the two `parallel loop` nests inside find
 * their arrays present and only the reduction cell moves per iteration.
 * Same lines as laplace_naive.c except the one `#pragma acc data` line
 * inserted above the loop (the loop is its block). Prints a checksum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256
#define M 256
#define ITER_MAX 60

static double A[N][M];
static double Anew[N][M];

static void init(void)
{
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++) {
            A[j][i] = 0.0;
            Anew[j][i] = 0.0;
        }
    for (int j = 0; j < N; j++) {
        A[j][0] = sin(3.14159265358979 * j / (N - 1));
        Anew[j][0] = A[j][0];
    }
}

int main(void)
{
    const double tol = 1.0e-6;
    double error = 1.0;
    int iter = 0;

    init();

#pragma acc data copy(A) create(Anew)
    while (error > tol && iter < ITER_MAX) {
        error = 0.0;

#pragma acc parallel loop reduction(max:error)
        for (int j = 1; j < N - 1; j++) {
#pragma acc loop reduction(max:error)
            for (int i = 1; i < M - 1; i++) {
                Anew[j][i] = 0.25 * (A[j][i + 1] + A[j][i - 1] + A[j - 1][i] + A[j + 1][i]);
                error = fmax(error, fabs(Anew[j][i] - A[j][i]));
            }
        }

#pragma acc parallel loop
        for (int j = 1; j < N - 1; j++) {
#pragma acc loop
            for (int i = 1; i < M - 1; i++)
                A[j][i] = Anew[j][i];
        }

        iter++;
    }

    double sum = 0.0;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < M; i++)
            sum += A[j][i];
    printf("laplace iterations %d error %.9f checksum %.9f\n", iter, error, sum);
    return 0;
}
