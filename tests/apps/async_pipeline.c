/* Unstructured data lifetime across functions plus async queues:
 * setup() does `enter data copyin/create`, teardown() does `exit data
 * copyout/delete` in another function; each step runs two independent
 * `parallel loop async(1)` / `async(2)` kernels (each waiting for queue 3's
 * reader of their array), joins them with `wait(1, 2) async(3)`, and the host
 * never blocks in step(). Every 8 steps it pulls a slice to the host with
 * `update self ... async(3)` queued right behind the kernel that wrote it,
 * `wait(3)`, fixes it up, and pushes it back with `update device ... async(3)`.
 * Prints a checksum. */
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 15)
#define STEPS 40

static float *x, *y, *z;

static void setup(void)
{
    x = malloc(N * sizeof *x);
    y = malloc(N * sizeof *y);
    z = malloc(N * sizeof *z);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 100) * 0.01f;
        y[i] = 1.0f;
        z[i] = 0.0f;
    }
#pragma acc enter data copyin(x[0:N], y[0:N]) create(z[0:N])
}

static void step(int s)
{
#pragma acc parallel loop present(x[0:N]) async(1) wait(3)
    for (int i = 0; i < N; i++)
        x[i] = 0.5f * x[i] + 0.25f;

#pragma acc parallel loop present(y[0:N]) async(2) wait(3)
    for (int i = 0; i < N; i++)
        y[i] = y[i] * 0.99f + 0.01f * (float)(s % 3);

#pragma acc parallel loop present(x[0:N], y[0:N], z[0:N]) wait(1, 2) async(3)
    for (int i = 0; i < N; i++)
        z[i] += x[i] * y[i];
}

static void teardown(void)
{
#pragma acc wait
#pragma acc exit data copyout(z[0:N]) delete(x[0:N], y[0:N])
    free(x);
    free(y);
}

int main(void)
{
    setup();
    for (int s = 0; s < STEPS; s++) {
        step(s);
        if (s % 8 == 7) {
            /* Look at and fix up the head of z on the host, as a user checks
             * progress mid-run. */
#pragma acc update self(z[0:64]) async(3)
#pragma acc wait(3)
            for (int i = 0; i < 64; i++)
                z[i] *= 0.5f;
#pragma acc update device(z[0:64]) async(3)
        }
    }
    teardown();
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        sum += z[i];
    printf("async checksum %.3f\n", sum);
    free(z);
    return 0;
}
