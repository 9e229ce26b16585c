/* A program that does what real programs do and profilers forget. First argument:
     sigwait N       N constructs, then the POSIX way to take SIGTERM: block it, have it sent
                     (to the process), and take it with sigwait() in a thread of its own.
                     Prints "got SIGTERM" and exits 0; killed by SIGTERM if a thread that
                     does not block it (a profiler's) took it instead
     reexec N K      N constructs, prints "image K finished N", then execs itself with K-1
                     (same pid) until K is 0
     heap-corrupt N  N constructs, prints "finished N", then frees a block twice: glibc ends
                     the process (SIGABRT) from inside free(), holding its allocator's lock
     spin N          N constructs, prints "ready N", then runs constructs until killed
     quiet N         N constructs, and nothing on standard output (which can hold a trace)
     gate N          waits for a byte on standard input before its first construct (several
                     processes let go at once start recording together), runs N constructs,
                     prints "ready N" and exits when standard input closes */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void construct(double *a) {
#pragma acc parallel loop copy(a[0:64])
    for (int i = 0; i < 64; i++) a[i] += 1.0;
}

static void *waiter(void *arg) {
    sigset_t *set = arg;
    int sig = 0;
    if (sigwait(set, &sig) == 0 && sig == SIGTERM) {
        printf("got SIGTERM\n");
        fflush(stdout);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: hostile_program MODE N [K]\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    double a[64] = {0};
    if (strcmp(mode, "gate") == 0) {
        char go;
        if (read(0, &go, 1) != 1) return 3;
    }
    for (long i = 0; i < n; i++) construct(a);
    if (strcmp(mode, "sigwait") == 0) {
        static sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        /* Sent before anyone waits: it stays pending until the waiter takes it, unless a
           thread that does not block SIGTERM is there to take it first. */
        kill(getpid(), SIGTERM);
        usleep(100000);
        pthread_t t;
        pthread_create(&t, NULL, waiter, &set);
        pthread_join(t, NULL);
        construct(a);
        return 0;
    }
    if (strcmp(mode, "reexec") == 0) {
        long k = argc > 3 ? atol(argv[3]) : 0;
        printf("image %ld finished %ld\n", k, n);
        fflush(stdout);
        if (k > 0) {
            char next[32];
            snprintf(next, sizeof next, "%ld", k - 1);
            char *args[] = {argv[0], argv[1], argv[2], next, NULL};
            execv("/proc/self/exe", args);
            perror("execv");
            return 1;
        }
        return 0;
    }
    if (strcmp(mode, "heap-corrupt") == 0) {
        printf("finished %ld\n", n);
        fflush(stdout);
        /* A block too large for glibc's per-thread cache, freed twice: the second free()
           takes the arena's lock, finds the block free already and aborts. */
        char *volatile p = malloc(4096);
        char *volatile guard = malloc(64);
        free(p);
        free(p);
        (void)guard;
        return 0;
    }
    if (strcmp(mode, "spin") == 0) {
        printf("ready %ld\n", n);
        fflush(stdout);
        for (;;) construct(a);
    }
    if (strcmp(mode, "gate") == 0) {
        printf("ready %ld\n", n);
        fflush(stdout);
        char rest;
        while (read(0, &rest, 1) > 0) {
        }
        return 0;
    }
    if (strcmp(mode, "quiet") == 0) return 0;
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
