/* Runs compute constructs until killed; says "running" once it has done some. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
    double a[256] = {0};
    for (long it = 0;; it++) {
#pragma acc parallel loop copy(a[0:256])
        for (int i = 0; i < 256; i++) a[i] += 1.0;
        if (it == 1000) {
            printf("running\n");
            fflush(stdout);
        }
        if (it % 100 == 0) usleep(1000);
    }
    return 0;
}
