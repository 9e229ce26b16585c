/* A stack array and a function static, both copied in and out by two kernels on every step of
 * the function's own loop: named by their source names (z, z1; GCC's symbol for the static is
 * z1.N), and kept on the device by a region around that loop. Prints a checksum. */
#include <stdio.h>

#define N 8192

static double relax(int steps)
{
    double z[N];
    static double z1[N];
    for (int i = 0; i < N; i++) {
        z[i] = i % 13;
        z1[i] = 0.0;
    }
    for (int s = 0; s < steps; s++) {
#pragma acc parallel loop copy(z, z1)
        for (int i = 1; i < N - 1; i++)
            z1[i] = 0.5 * (z[i - 1] + z[i + 1]);
#pragma acc parallel loop copy(z, z1)
        for (int i = 1; i < N - 1; i++)
            z[i] = z1[i];
    }
    double s = 0.0;
    for (int i = 0; i < N; i++)
        s += z[i];
    return s;
}

int main(void)
{
    printf("stack_arrays checksum %.6f\n", relax(10));
    return 0;
}
