/* Heat diffusion whose kernels live in a function that the time loop calls, on heap arrays
 * held in locals and in a struct: `sweep` copies its arrays in and out on every call, so the
 * data region belongs around the caller's loop, and its clauses name the caller's pointers
 * with their sections. The host reads T after the loop; Tnew is scratch. Prints a checksum. */
#include <stdio.h>
#include <stdlib.h>

struct grid {
    int n;
    double *w; /* a weight per cell, read by the kernels */
};

static void sweep(double *t, double *tn, const struct grid *g, int nx, int ny)
{
    const double *w = g->w;
#pragma acc parallel loop collapse(2) copyin(t[0:nx*ny], w[0:nx*ny]) copyout(tn[0:nx*ny])
    for (int j = 1; j < ny - 1; j++)
        for (int i = 1; i < nx - 1; i++)
            tn[j * nx + i] = w[j * nx + i] * (t[j * nx + i - 1] + t[j * nx + i + 1] + t[(j - 1) * nx + i] + t[(j + 1) * nx + i]);
#pragma acc parallel loop collapse(2) copyin(tn[0:nx*ny]) copy(t[0:nx*ny])
    for (int j = 1; j < ny - 1; j++)
        for (int i = 1; i < nx - 1; i++)
            t[j * nx + i] = tn[j * nx + i];
}

int main(int argc, char **argv)
{
    int nx = argc > 1 ? atoi(argv[1]) : 256, ny = nx, steps = 20;
    double *T = malloc(nx * ny * sizeof(double));
    double *Tnew = calloc(nx * ny, sizeof(double));
    struct grid g;
    g.n = nx * ny;
    g.w = malloc(g.n * sizeof(double));
    for (int i = 0; i < nx * ny; i++)
        T[i] = i < nx ? 1.0 : 0.0;
    for (int i = 0; i < g.n; i++)
        g.w[i] = 0.25;
    for (int s = 0; s < steps; s++) {
        sweep(T, Tnew, &g, nx, ny);
    }
    double sum = 0.0;
    for (int i = 0; i < nx * ny; i++)
        sum += T[i];
    printf("heat_calls checksum %.9f\n", sum);
    free(g.w);
    free(Tnew);
    free(T);
    return 0;
}
