/* An OpenACC program that marks its phases with NVTX, through NVIDIA's header-only nvtx3 API
 * (the nvidia-nvtx wheel's include/nvtx3), the way Nsight Systems users do: push/pop ranges
 * nested in each other, a range in a domain of its own with a registered message and
 * attributes, a start/end range ended on another thread, marks, a named category and a named
 * thread. Build: gcc -fopenacc -I<nvtx include> nvtx_phases.c -ldl -lpthread
 * Usage: nvtx_phases [iterations]; prints the sum it computed. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N 1000

static double a[N];

static void *ender(void *range)
{
    nvtxRangeEnd(*(nvtxRangeId_t *)range);
    return NULL;
}

int main(int argc, char **argv)
{
    int iterations = argc > 1 ? atoi(argv[1]) : 3;
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "main thread");
    nvtxNameCategoryA(7, "stencil");
    nvtxDomainHandle_t solver = nvtxDomainCreateA("solver");
    nvtxStringHandle_t sweep = nvtxDomainRegisterStringA(solver, "sweep");

    nvtxRangeId_t whole = nvtxRangeStartA("whole run");
    nvtxRangePushA("setup");
#pragma acc parallel loop copyout(a)
    for (int i = 0; i < N; i++)
        a[i] = i;
    nvtxRangePop();

    nvtxRangePushA("solve");
    for (int it = 0; it < iterations; it++) {
        nvtxEventAttributes_t attr = {0};
        attr.version = NVTX_VERSION;
        attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        attr.category = 7;
        attr.colorType = NVTX_COLOR_ARGB;
        attr.color = 0xff00ff00;
        attr.payloadType = NVTX_PAYLOAD_TYPE_INT64;
        attr.payload.llValue = it;
        attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
        attr.message.ascii = "iteration";
        nvtxRangePushEx(&attr);
#pragma acc parallel loop copy(a)
        for (int i = 0; i < N; i++)
            a[i] = a[i] * 0.5 + 1.0;
        nvtxMarkA("iteration done");
        nvtxRangePop();
    }
    nvtxRangePop();

    nvtxEventAttributes_t in_domain = {0};
    in_domain.version = NVTX_VERSION;
    in_domain.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    in_domain.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    in_domain.message.registered = sweep;
    nvtxDomainRangePushEx(solver, &in_domain);
    double sum = 0;
#pragma acc parallel loop reduction(+:sum) copyin(a)
    for (int i = 0; i < N; i++)
        sum += a[i];
    nvtxDomainRangePop(solver);

    pthread_t t;
    pthread_create(&t, NULL, ender, &whole);
    pthread_join(t, NULL);
    printf("%.1f\n", sum);
    return 0;
}
