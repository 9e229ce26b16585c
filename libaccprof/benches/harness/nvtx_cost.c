/* What an NVTX call costs a program with accprof as its NVTX tool, against the same calls
   with no tool (nvtx3 then calls nothing). One OpenACC construct first, so that accprof is
   recording (GCC's libgomp registers it at load; recording starts at the first event).
   Build: gcc -O2 -fopenacc -I<nvtx include> nvtx_cost.c -ldl
   Run:   ./nvtx_cost [pairs]; then LD_PRELOAD=libaccprof.so ./nvtx_cost [pairs]
   Prints ns per push+pop pair and per mark, wall and thread CPU, median of 7 rounds. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 1000000;
    int x = 0;
#pragma acc parallel copy(x)
    x += 1;
    double push_pop[7], push_pop_cpu[7], mark[7];
    for (int r = 0; r < 7; r++) {
        double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < pairs; i++) {
            nvtxRangePushA("step");
            nvtxRangePop();
        }
        double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < pairs; i++)
            nvtxMarkA("tick");
        double w2 = now(CLOCK_MONOTONIC);
        push_pop[r] = (w1 - w0) / pairs;
        push_pop_cpu[r] = (c1 - c0) / pairs;
        mark[r] = (w2 - w1) / pairs;
    }
    qsort(push_pop, 7, sizeof(double), cmp);
    qsort(push_pop_cpu, 7, sizeof(double), cmp);
    qsort(mark, 7, sizeof(double), cmp);
    printf("%s: push+pop %.1f ns (thread CPU %.1f), mark %.1f ns, median of 7 rounds of %ld\n",
           getenv("LD_PRELOAD") ? "with accprof" : "no tool", push_pop[3], push_pop_cpu[3], mark[3], pairs);
    return x == 1 ? 0 : 1;
}
