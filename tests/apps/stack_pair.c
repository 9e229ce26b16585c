/* Two local arrays of one size in main, moved every step by a kernel in a function the time
 * loop calls and by one in main itself: their sizes cannot tell them apart, where main's frame
 * lay can (the trace's header gives it), so the advice names them `u` and `v`, and the region
 * it advises, pasted around main's loop, keeps both on the device. Prints a checksum. */
#include <stdio.h>

#define N 4096

static void smooth(double *restrict out, const double *restrict in, int n)
{
#pragma acc parallel loop copyin(in[0:n]) copyout(out[0:n])
    for (int i = 1; i < n - 1; i++)
        out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0;
}

int main(void)
{
    double u[N], v[N];
    for (int i = 0; i < N; i++) {
        u[i] = i % 7;
        v[i] = 0.0;
    }
    double sum = 0.0;
    for (int step = 0; step < 20; step++) {
        smooth(v, u, N);
#pragma acc parallel loop copy(u[0:N]) copyin(v[0:N]) reduction(+:sum)
        for (int i = 1; i < N - 1; i++) {
            u[i] = v[i];
            sum += v[i];
        }
    }
    printf("stack_pair checksum %.6f\n", sum);
    return 0;
}
