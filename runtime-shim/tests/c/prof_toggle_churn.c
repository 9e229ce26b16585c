/* A tool that changes its callbacks all the time, as one that switches a callback on and off
   around regions does.

   usage: prof_toggle_churn ROUNDS THREADS EVENTS

   Part 1, memory: a callback registered for every event; ROUNDS rounds each disable and enable it
   for one event (acc_toggle), disable and enable that whole event, and register and unregister
   a second callback (acc_reg). Prints the resident memory before and after.

   Part 2, concurrency: THREADS threads each dispatch EVENTS enter_data start events (acc_copyin
   of their own array) while the main thread keeps registering, unregistering, enabling and
   disabling other callbacks of that event, around a "steady" callback that stays registered and
   enabled throughout. Each thread counts the steady callback's calls on itself: it must see all
   of them. Prints "thread I: steady N of M" per thread and how often the churned callbacks ran. */
#include <openacc.h>
#include <acc_prof.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc_self.h"

static void cb_any (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { }
static void cb_other (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { }

static void churn_once (void)
{
  acc_prof_unregister (acc_ev_enqueue_launch_start, cb_any, acc_toggle);
  acc_prof_register (acc_ev_enqueue_launch_start, cb_any, acc_toggle);
  acc_prof_unregister (acc_ev_enqueue_launch_start, NULL, acc_toggle);
  acc_prof_register (acc_ev_enqueue_launch_start, NULL, acc_toggle);
  acc_prof_register (acc_ev_enqueue_launch_end, cb_other, acc_reg);
  acc_prof_unregister (acc_ev_enqueue_launch_end, cb_other, acc_reg);
}

static void memory (long rounds)
{
  for (int ev = acc_ev_none + 1; ev <= acc_ev_wait_end; ev++)
    acc_prof_register ((acc_event_t) ev, cb_any, acc_reg);
  for (int i = 0; i < 1000; i++)  /* first-time allocations out of the way */
    churn_once ();
  long before = proc_status_kib ("VmRSS:");
  for (long i = 0; i < rounds; i++)
    churn_once ();
  printf ("resident KiB before %ld\n", before);
  printf ("resident KiB after %ld\n", proc_status_kib ("VmRSS:"));
  for (int ev = acc_ev_none + 1; ev <= acc_ev_wait_end; ev++)
    acc_prof_unregister ((acc_event_t) ev, cb_any, acc_reg);
}

static __thread long steady_here;      /* steady's calls on this thread */
static long churned_calls;             /* the churned callbacks' calls, all threads */
static volatile int stop;

static void steady (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { steady_here++; }
static void churned_a (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { __atomic_add_fetch (&churned_calls, 1, __ATOMIC_RELAXED); }
static void churned_b (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { __atomic_add_fetch (&churned_calls, 1, __ATOMIC_RELAXED); }
static void churned_c (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { __atomic_add_fetch (&churned_calls, 1, __ATOMIC_RELAXED); }

static long events_per_thread;
static long seen[64];

static void *dispatcher (void *arg)
{
  long me = (long) arg;
  double x[16];
  for (long i = 0; i < events_per_thread; i++)
    {
      acc_copyin (x, sizeof x);
      acc_delete (x, sizeof x);
    }
  seen[me] = steady_here;
  return NULL;
}

static void concurrency (int threads, long events)
{
  const acc_event_t ev = acc_ev_enter_data_start;
  /* churned_a before steady, churned_b after it; churned_c comes and goes at the tail. */
  acc_prof_register (ev, churned_a, acc_reg);
  acc_prof_register (ev, steady, acc_reg);
  acc_prof_register (ev, churned_b, acc_reg);
  events_per_thread = events;
  pthread_t t[64];
  for (long i = 0; i < threads; i++)
    pthread_create (&t[i], NULL, dispatcher, (void *) i);
  long changes = 0;
  for (int done = 0; !done; changes++)
    {
      acc_prof_unregister (ev, churned_a, acc_reg);    /* a moves to the tail */
      acc_prof_register (ev, churned_a, acc_reg);
      acc_prof_unregister (ev, churned_b, acc_toggle);
      acc_prof_register (ev, churned_c, acc_reg);
      acc_prof_register (ev, churned_b, acc_toggle);
      acc_prof_unregister (ev, churned_c, acc_reg);
      acc_prof_register (acc_ev_enter_data_end, churned_c, acc_reg);
      acc_prof_unregister (acc_ev_enter_data_end, churned_c, acc_reg);
      if (changes % 64 == 0)
        {
          done = 1;
          for (int i = 0; i < threads; i++)
            done &= __atomic_load_n (&seen[i], __ATOMIC_ACQUIRE) != 0 || events == 0;
        }
    }
  for (int i = 0; i < threads; i++)
    pthread_join (t[i], NULL);
  for (int i = 0; i < threads; i++)
    printf ("thread %d: steady %ld of %ld\n", i, seen[i], events);
  printf ("churn rounds %ld, churned callbacks ran %ld\n", changes, churned_calls);
}

int main (int argc, char **argv)
{
  if (argc != 4)
    return 2;
  acc_init (acc_device_default);
  memory (atol (argv[1]));
  int threads = atoi (argv[2]);
  concurrency (threads < 64 ? threads : 64, atol (argv[3]));
  printf ("done\n");
  return 0;
}
