/* Constructs reached from the same stack position by different call sites, and one construct
 * reached from varying stack positions: libaccprof remembers where on the stack it found a
 * construct's call site (libaccprof/src/unwind.rs), and every construct must still get its own
 * line, every time. Prints the checksum of `a`. */
#include <stdio.h>
#include <stdlib.h>

#define N 64
static double a[N];

__attribute__((noinline)) static void first(void)
{
#pragma acc parallel loop copy(a) /* first */
    for (int i = 0; i < N; i++) a[i] += 1;
}

__attribute__((noinline)) static void second(void)
{
#pragma acc parallel loop copy(a) /* second */
    for (int i = 0; i < N; i++) a[i] += 2;
}

/* Reaches its construct `depth` calls deeper, each frame a different size. */
__attribute__((noinline)) static void nested(int depth)
{
    if (depth > 0) {
        volatile char pad[16 + 48 * depth];
        pad[0] = (char)depth;
        nested(depth - 1);
        pad[1] = pad[0];
        return;
    }
#pragma acc parallel loop copy(a) /* nested */
    for (int i = 0; i < N; i++) a[i] += 3;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    for (int it = 0; it < iters; it++) {
        if (it % 3 == 0)
            first();
        else
            second();
        nested(it % 4);
#pragma acc parallel loop copy(a) /* inline */
        for (int i = 0; i < N; i++) a[i] -= 1;
        if (it % 2) {
#pragma acc enter data copyin(a) /* enter-odd */
#pragma acc exit data copyout(a) /* exit-odd */
        } else {
#pragma acc update device(a) /* update-even */
        }
    }
    double s = 0;
    for (int i = 0; i < N; i++) s += a[i];
    printf("%.0f\n", s);
    return 0;
}
