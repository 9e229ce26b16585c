/* The seeds' Laplace 2D solver with its arrays on the heap, naive (each compute construct copies
 * them in and out), for checking that accprof names heap blocks by their allocation line on a
 * real GPU: GCC reports no variable names, and heap arrays have no symbol either.
 *
 *   gcc -O2 -g -fopenacc -foffload=nvptx-none -foffload-options="-misa=sm_80 -lm" laplace_heap.c -o laplace_heap -lm
 *   LD_PRELOAD=libaccprof.so ./laplace_heap [n] [iterations]      n default 4096, 4 iterations
 *
 * The report should show the transfers as heap@laplace_heap.c:<the line of each malloc below>. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4096;
    int iter_max = argc > 2 ? atoi(argv[2]) : 4;
    if (n < 3 || iter_max < 0) {
        fprintf(stderr, "usage: %s [n >= 3] [iterations]\n", argv[0]);
        return 2;
    }
    size_t cells = (size_t)n * n;
    double *A = malloc(cells * sizeof(double));    /* ALLOC_A */
    double *Anew = malloc(cells * sizeof(double)); /* ALLOC_ANEW */
    if (!A || !Anew)
        return 1;
    memset(A, 0, cells * sizeof(double));
    memset(Anew, 0, cells * sizeof(double));
    for (int j = 0; j < n; j++)
        A[(size_t)j * n] = Anew[(size_t)j * n] = 1.0;

    double error = 1.0;
    int iter = 0;
    while (error > 1.0e-6 && iter < iter_max) {
        error = 0.0;
#pragma acc parallel loop reduction(max:error) copy(A[0:cells], Anew[0:cells])
        for (int j = 1; j < n - 1; j++)
            for (int i = 1; i < n - 1; i++) {
                size_t c = (size_t)j * n + i;
                Anew[c] = 0.25 * (A[c + 1] + A[c - 1] + A[c - n] + A[c + n]);
                error = fmax(error, fabs(Anew[c] - A[c]));
            }
#pragma acc parallel loop copy(A[0:cells], Anew[0:cells])
        for (int j = 1; j < n - 1; j++)
            for (int i = 1; i < n - 1; i++)
                A[(size_t)j * n + i] = Anew[(size_t)j * n + i];
        iter++;
    }
    double sum = 0;
    for (size_t c = 0; c < cells; c++)
        sum += A[c];
    printf("iterations: %d, error %.6f, checksum %.6f\n", iter, error, sum);
    free(A);
    free(Anew);
    return 0;
}
