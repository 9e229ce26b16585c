/* Two local arrays of one size in main, only one of them moved: nothing in the transfers says
 * which it is, but main's frame, which the trace's header gives, does: the advice names `a`.
 * Prints a checksum. */
#include <stdio.h>

#define N 4096

int main(void)
{
    double a[N], b[N];
    for (int i = 0; i < N; i++) {
        a[i] = i % 7;
        b[i] = 1.0;
    }
    for (int step = 0; step < 20; step++) {
#pragma acc parallel loop copy(a[0:N])
        for (int i = 1; i < N - 1; i++)
            a[i] = 0.5 * a[i] + 0.25;
    }
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        sum += a[i] + b[i];
    printf("stack_one checksum %.6f\n", sum);
    return 0;
}
