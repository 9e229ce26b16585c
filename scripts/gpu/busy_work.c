/* CPU-bound work on N threads for S seconds: what a program's own host threads get done while
 * the shim's staging threads run beside them (docs/performance/shim.md: the staging threads kept
 * warm between uploads).
 * Prints the total work in millions of steps, so that two runs beside different shim settings
 * can be compared. Build: gcc -O2 -pthread -o busy_work busy_work.c
 * Usage: busy_work THREADS SECONDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *work(void *out) {
  uint64_t x = (uintptr_t)out | 1, steps = 0;
  double end = now() + seconds;
  do {
    for (int i = 0; i < 65536; i++) { /* xorshift: no memory traffic, no vector units */
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    }
    steps += 65536;
  } while (now() < end);
  *(uint64_t *)out = steps + (x == 0); /* keeps x live */
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: busy_work THREADS SECONDS\n"); return 2; }
  int n = atoi(argv[1]);
  seconds = atof(argv[2]);
  if (n < 1 || n > 1024 || seconds <= 0) { fprintf(stderr, "busy_work: bad arguments\n"); return 2; }
  pthread_t *t = calloc(n, sizeof *t);
  uint64_t *steps = calloc(n, sizeof *steps);
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, work, &steps[i]);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) { pthread_join(t[i], NULL); total += steps[i]; }
  printf("busy_work: %d threads, %.1f s: %.0f M steps\n", n, seconds, total / 1e6);
  return 0;
}
