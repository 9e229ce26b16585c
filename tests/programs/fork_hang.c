/* Measures how often a forked child hangs when another thread is inside OpenACC constructs at
   the fork. A second thread runs constructs without pause; the main thread forks FORKS
   children (first argument, default 200), each of which runs one construct and _exits. A child
   not done within LIMIT seconds (second argument, default 2) counts as hung and is killed.
   With a third argument "thread", each child runs its construct on a new thread of its own
   instead of the one that forked. Prints "forks N hung H". */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static void construct(double *a) {
#pragma acc parallel loop copy(a[0:64])
    for (int i = 0; i < 64; i++) a[i] += 1.0;
}

static void *busy(void *arg) {
    (void)arg;
    double a[64] = {0};
    while (!stop) construct(a);
    return NULL;
}

static void *one_construct(void *arg) {
    construct(arg);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int forks = argc > 1 ? atoi(argv[1]) : 200;
    double limit = argc > 2 ? atof(argv[2]) : 2.0;
    int on_new_thread = argc > 3 && strcmp(argv[3], "thread") == 0;
    double a[64] = {0};
    construct(a);
    pthread_t t;
    pthread_create(&t, NULL, busy, NULL);
    int hung = 0;
    for (int i = 0; i < forks; i++) {
        usleep(1000 + rand() % 1000);
        pid_t pid = fork();
        if (pid == 0) {
            if (on_new_thread) {
                pthread_t c;
                pthread_create(&c, NULL, one_construct, a);
                pthread_join(c, NULL);
            } else {
                construct(a);
            }
            _exit(0);
        }
        double deadline = now() + limit;
        int status, done = 0;
        while (now() < deadline) {
            if (waitpid(pid, &status, WNOHANG) == pid) {
                done = 1;
                break;
            }
            usleep(1000);
        }
        if (!done) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("forks %d hung %d\n", forks, hung);
    return 0;
}
