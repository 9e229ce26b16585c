/* Forks a child that also runs OpenACC constructs: the parent's trace holds only the parent's
   events, and the child runs unharmed (recording is disabled in a forked child). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static void work(double *a, int n) {
#pragma acc parallel loop copy(a[0:n])
    for (int i = 0; i < n; i++) a[i] += 1.0;
}

int main(void) {
    double a[32] = {0};
    work(a, 32);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 10; i++) work(a, 32);
        _exit(a[0] == 11.0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    work(a, 32);
    printf("child exit %d\n", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}
