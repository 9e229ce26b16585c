/* The seeds' Laplace 2D solver (the data-locality case study), in C for GCC's OpenACC.
 *   gcc -O2 -g -fopenacc -foffload=nvptx-none -foffload-options="-misa=sm_80 -lm" laplace.c -o laplace -lm
 *   ./laplace [n] [iterations]          n <= NMAX (4096), default 4096 and 20
 * Built plain it is the naive version: each compute construct copies A and Anew in and out
 * (implicitly, as the arrays are not present). With -DDATA_REGION the loop is wrapped in
 * `#pragma acc data copy(A) create(Anew)`, the fix the case study makes. A and Anew are global
 * on purpose: the symbol table names them, which is how accprof names the host side of transfers
 * GCC reports no names for. As in the seeds, the whole arrays move (NMAX^2 doubles, 128 MiB each).
 * laplace_blocks.c includes this file with AFTER_ITERATION defined. (Tests find the pragmas' lines.) */
#ifndef AFTER_ITERATION
#define AFTER_ITERATION(iter) ((void)0)
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#ifndef NMAX
#define NMAX 4096
#endif

double A[NMAX][NMAX];
double Anew[NMAX][NMAX];

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : NMAX;
    int iter_max = argc > 2 ? atoi(argv[2]) : 20;
    if (n < 3 || n > NMAX || iter_max < 0) {
        fprintf(stderr, "usage: %s [n (3..%d)] [iterations]\n", argv[0], NMAX);
        return 2;
    }
    const double tol = 1.0e-6;
    double error = 1.0;
    int iter = 0;

    memset(A, 0, sizeof A);
    memset(Anew, 0, sizeof Anew);
    for (int j = 0; j < n; j++) {
        A[j][0] = 1.0;
        Anew[j][0] = 1.0;
    }

    double t0 = now_s();
#ifdef DATA_REGION
#pragma acc data copy(A) create(Anew)
#endif
    {
        while (error > tol && iter < iter_max) {
            error = 0.0;
#pragma acc parallel loop reduction(max:error)
            for (int j = 1; j < n - 1; j++) {
#pragma acc loop reduction(max:error)
                for (int i = 1; i < n - 1; i++) {
                    Anew[j][i] = 0.25 * (A[j][i + 1] + A[j][i - 1] + A[j - 1][i] + A[j + 1][i]);
                    error = fmax(error, fabs(Anew[j][i] - A[j][i]));
                }
            }
#pragma acc parallel loop
            for (int j = 1; j < n - 1; j++) {
#pragma acc loop
                for (int i = 1; i < n - 1; i++)
                    A[j][i] = Anew[j][i];
            }
            iter++; AFTER_ITERATION(iter);
        }
    }
    double secs = now_s() - t0;
    printf(" total: %.6f s\n", secs);
    printf("laplace %s n=%d iterations=%d error=%g\n",
#ifdef DATA_REGION
           "data-region",
#else
           "naive",
#endif
           n, iter, error);
    return 0;
}
