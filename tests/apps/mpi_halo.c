/* MPI + OpenACC halo exchange: a 1-D row decomposition of a 2-D Jacobi
 * solve over 2-4 ranks. The grid stays on the device in a `data` region; each
 * iteration `update host` the two boundary rows, swaps halos with
 * MPI_Sendrecv, `update device` the two halo rows, runs the stencil
 * `parallel loop collapse(2) reduction(max:)` and an MPI_Allreduce of the
 * error. Runs with one rank too. Prints a checksum from rank 0 only. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NX 128       /* columns */
#define NY_GLOBAL 128 /* rows over all ranks */
#define ITERS 50

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const int ny = NY_GLOBAL / size; /* own rows; +2 halo rows */
    const int rows = ny + 2;
    double *a = calloc((size_t)rows * NX, sizeof *a);
    double *an = calloc((size_t)rows * NX, sizeof *an);
    const int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    const int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    /* fixed hot left edge on every rank; global top row hot on rank 0 */
    for (int j = 0; j < rows; j++)
        a[j * NX] = an[j * NX] = 1.0;
    if (rank == 0)
        for (int i = 0; i < NX; i++)
            a[i] = an[i] = 1.0;

    double err = 0.0;
    const int n = rows * NX;
#pragma acc data copy(a[0:n]) copyin(an[0:n])
    for (int it = 0; it < ITERS; it++) {
#pragma acc update host(a[NX:NX])
#pragma acc update host(a[ny * NX:NX])
        MPI_Sendrecv(&a[NX], NX, MPI_DOUBLE, up, 0, &a[(ny + 1) * NX], NX, MPI_DOUBLE, down, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&a[ny * NX], NX, MPI_DOUBLE, down, 1, &a[0], NX, MPI_DOUBLE, up, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#pragma acc update device(a[0:NX])
#pragma acc update device(a[(ny + 1) * NX:NX])

        double local = 0.0;
#pragma acc parallel loop collapse(2) present(a[0:n], an[0:n]) reduction(max:local)
        for (int j = 1; j <= ny; j++)
            for (int i = 1; i < NX - 1; i++) {
                an[j * NX + i] = 0.25 * (a[j * NX + i - 1] + a[j * NX + i + 1] +
                                         a[(j - 1) * NX + i] + a[(j + 1) * NX + i]);
                local = fmax(local, fabs(an[j * NX + i] - a[j * NX + i]));
            }
#pragma acc parallel loop collapse(2) present(a[0:n], an[0:n])
        for (int j = 1; j <= ny; j++)
            for (int i = 1; i < NX - 1; i++)
                a[j * NX + i] = an[j * NX + i];
        MPI_Allreduce(&local, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }

    double mine = 0.0, total = 0.0;
    for (int j = 1; j <= ny; j++)
        for (int i = 0; i < NX; i++)
            mine += a[j * NX + i];
    MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_halo ranks %d error %.9f checksum %.9f\n", size, err, total);
    free(a);
    free(an);
    MPI_Finalize();
    return 0;
}
