/* A minimal OpenACC program: one data region, two compute constructs, an update. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    double *a = malloc(n * sizeof *a);
    for (int i = 0; i < n; i++) a[i] = i;
#pragma acc data copy(a[0:n])
    {
#pragma acc parallel loop
        for (int i = 0; i < n; i++) a[i] *= 2.0;
#pragma acc update self(a[0:n])
#pragma acc parallel loop
        for (int i = 0; i < n; i++) a[i] += 1.0;
    }
    printf("%g\n", a[n - 1]);
    free(a);
    return 0;
}
