/* Device scratch memory from acc_malloc, allocated and freed on every step of the time loop and
 * used through deviceptr; and a block of neighbouring global scalars pushed to the device every
 * step with one update (separate variables side by side in memory, not an array in slices).
 * Prints a checksum. */
#include <openacc.h>
#include <stdio.h>

#define N (1 << 18)

static double a[N];
double c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18;

int main(void)
{
    for (int i = 0; i < N; i++)
        a[i] = i % 11;
#pragma acc enter data copyin(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18)
#pragma acc data copy(a)
    for (int step = 0; step < 10; step++) {
        c1 = step;
        c18 = 0.5;
#pragma acc update device(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18)
        double *tmp = acc_malloc(N * sizeof(double));
#pragma acc parallel loop deviceptr(tmp) present(a, c1, c18)
        for (int i = 0; i < N; i++)
            tmp[i] = 2.0 * a[i] + c1 * 0.0;
#pragma acc parallel loop deviceptr(tmp) present(a, c18)
        for (int i = 0; i < N; i++)
            a[i] = c18 * tmp[i] + 1.0;
        acc_free(tmp);
    }
#pragma acc exit data delete(c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16, c17, c18)
    double s = 0.0;
    for (int i = 0; i < N; i++)
        s += a[i];
    printf("scratch_malloc checksum %.3f\n", s);
    return 0;
}
