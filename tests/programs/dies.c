/* Ends in the way its first argument names, after finishing the number of compute constructs
   its second argument gives, and says on stdout how many it finished first:
     segv, abort, _exit, exec, term  die that way right after "finished N" (term: SIGTERM)
     execl                         become /bin/true through execl, which glibc turns into an
                                   execve call of its own that no interposer sees
     own-handler                   a SIGSEGV handler of the program's own (installed before any
                                   construct, on an alternate stack) runs and _exits 42
     overflow                      the same handler, for a stack overflow: only the alternate
                                   stack can run it
     kill                          print "ready N" and wait to be killed
     kill-threads                  4 threads finish N constructs each and stay; then print
                                   "ready 4N" and wait to be killed
     hold                          print "ready N", wait for stdin to close, exit(0)
     thread-exit                   4 threads run constructs without end; a fifth calls exit(0)
                                   once they have finished at least N, printing how many they
                                   had finished by then */
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

static void own_handler(int sig) {
    (void)sig;
    static const char msg[] = "own handler ran\n";
    write(1, msg, sizeof msg - 1);
    _exit(42);
}

/* Recurses until the stack runs out; the volatile array keeps each frame. */
static int recurse(int depth) {
    volatile char frame[1024];
    frame[0] = (char)depth;
    return recurse(depth + 1) + frame[0];
}

static volatile long finished[4];
static volatile int stop;

static void *runner(void *arg) {
    long k = (long)arg;
    double a[64] = {0};
    while (!stop) {
        construct(a);
        finished[k]++;
    }
    return NULL;
}

static pthread_barrier_t all_finished;

/* Finishes its constructs, then stays alive (its buffer is not handed over at thread exit). */
static void *counted_runner(void *arg) {
    long n = (long)arg;
    double a[64] = {0};
    for (long i = 0; i < n; i++) construct(a);
    pthread_barrier_wait(&all_finished);
    for (;;) pause();
    return NULL;
}

static long total(void) {
    long s = 0;
    for (int i = 0; i < 4; i++) s += finished[i];
    return s;
}

static void *exiter(void *arg) {
    long n = (long)arg;
    while (total() < n) usleep(100);
    /* Every construct counted here has finished; the runners go on during the exit. */
    printf("finished %ld\n", total());
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: dies MODE N\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (strcmp(mode, "own-handler") == 0 || strcmp(mode, "overflow") == 0) {
        static char alt[1 << 16];
        stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
        sigaltstack(&ss, NULL);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_handler;
        sa.sa_flags = SA_ONSTACK;
        sigaction(SIGSEGV, &sa, NULL);
    }
    if (strcmp(mode, "thread-exit") == 0) {
        pthread_t t[5];
        for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, runner, (void *)i);
        pthread_create(&t[4], NULL, exiter, (void *)n);
        for (int i = 0; i < 5; i++) pthread_join(t[i], NULL);
        return 1; /* not reached: the exiter ends the process */
    }
    if (strcmp(mode, "kill-threads") == 0) {
        pthread_t t[4];
        pthread_barrier_init(&all_finished, NULL, 5);
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, counted_runner, (void *)n);
        pthread_barrier_wait(&all_finished);
        printf("ready %ld\n", 4 * n);
        fflush(stdout);
        for (;;) pause();
    }
    double a[64] = {0};
    for (long i = 0; i < n; i++) construct(a);
    if (strcmp(mode, "hold") == 0) {
        printf("ready %ld\n", n);
        fflush(stdout);
        while (getchar() != EOF) {
        }
        return 0;
    }
    if (strcmp(mode, "kill") == 0) {
        printf("ready %ld\n", n);
        fflush(stdout);
        for (;;) pause();
    }
    printf("finished %ld\n", n);
    fflush(stdout);
    if (strcmp(mode, "segv") == 0 || strcmp(mode, "own-handler") == 0) {
        volatile int *p = NULL;
        *p = 1;
    } else if (strcmp(mode, "overflow") == 0) {
        return recurse(0);
    } else if (strcmp(mode, "abort") == 0) {
        abort();
    } else if (strcmp(mode, "term") == 0) {
        raise(SIGTERM);
    } else if (strcmp(mode, "_exit") == 0) {
        _exit(3);
    } else if (strcmp(mode, "exec") == 0) {
        char *args[] = {"true", NULL};
        execv("/bin/true", args);
        perror("execv");
        return 1;
    } else if (strcmp(mode, "execl") == 0) {
        execl("/bin/true", "true", (char *)NULL);
        perror("execl");
        return 1;
    }
    return 0;
}
