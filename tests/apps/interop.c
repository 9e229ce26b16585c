/* Directives mixed with the OpenACC runtime API and host threads, as codes
 * that call a device library do: acc_copyin / acc_copyout (API) give a host
 * array its device copy; `host_data use_device` hands its device address to
 * "library" routines whose kernels take it with `deviceptr`; acc_malloc +
 * acc_memcpy_from_device make a device-only scratch buffer (libgomp's host
 * fallback refuses acc_map_data, so none here); two POSIX threads (GCC
 * refuses OpenACC inside `omp parallel`) each run `parallel loop present(...)
 * async(thread + 1)` on their half and acc_wait their own queue; `enter data`,
 * `update self` and `exit data` directives manage a second array.
 * Prints a checksum. */
#include <openacc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 14)

static double *x, *w;

/* The "library": works on device memory only. */
static void lib_scale(double *dev, int n, double f)
{
#pragma acc parallel loop deviceptr(dev)
    for (int i = 0; i < n; i++)
        dev[i] *= f;
}

/* The "library": copies twice the first n of src to dst, both on the device. */
static void lib_head(double *dst, const double *src, int n)
{
#pragma acc parallel loop deviceptr(dst, src)
    for (int i = 0; i < n; i++)
        dst[i] = 2.0 * src[i];
}

/* One host thread's half, on its own async queue. */
static void *half(void *arg)
{
    const int t = (int)(long)arg;
    const int lo = t * (N / 2), hi = lo + N / 2;
#pragma acc parallel loop present(x[0:N], w[0:N]) async(t + 1)
    for (int i = lo; i < hi; i++)
        x[i] = x[i] * w[i] + 1.0;
    acc_wait(t + 1);
    return NULL;
}

int main(void)
{
    x = malloc(N * sizeof *x);
    w = malloc(N * sizeof *w);
    for (int i = 0; i < N; i++) {
        x[i] = (double)(i % 10);
        w[i] = 1.0 + (double)(i % 3);
    }

    acc_copyin(x, N * sizeof *x);
#pragma acc enter data copyin(w[0:N])

    for (int rep = 0; rep < 5; rep++) {
#pragma acc host_data use_device(x)
        lib_scale(x, N, 0.5);

        pthread_t th[2];
        for (long t = 0; t < 2; t++)
            pthread_create(&th[t], NULL, half, (void *)t);
        for (int t = 0; t < 2; t++)
            pthread_join(th[t], NULL);
    }

    double *scratch = acc_malloc(64 * sizeof *scratch);
    double head[64];
#pragma acc host_data use_device(x)
    lib_head(scratch, x, 64);
    acc_memcpy_from_device(head, scratch, sizeof head);
    acc_free(scratch);

#pragma acc update self(w[0:N / 2])
#pragma acc exit data delete(w[0:N])
    acc_copyout(x, N * sizeof *x);

    double sum = 0.0;
    for (int i = 0; i < N; i++)
        sum += x[i] + w[i];
    printf("interop head %.6f checksum %.6f\n", head[0] + head[63], sum);
    free(x);
    free(w);
    return 0;
}
