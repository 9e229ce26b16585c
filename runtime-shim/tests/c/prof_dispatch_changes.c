/* Callback lists changed while their event is being processed (OpenACC profiling interface,
   "Dynamic Registration and Unregistration" and "Dynamic Enabling and Disabling").

   Three callbacks A, B, C note their letter in a trace; one of them changes the registry while
   the event is being dispatched. The enter_data start and end events of acc_copyin are used:
   start events walk the callback list head to tail (registration order), end events tail to
   head. For each scenario the program prints "name: trace" (the letters of the first event
   instance, then " | " and the second instance where the scenario needs one). */
#include <openacc.h>
#include <acc_prof.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static char trace[64];
static acc_event_t ev;              /* the event of the current scenario */
static void (*a_does) (void);       /* what A (or B) does on its next call, once */
static void (*b_does) (void);

static void note (char c)
{
  size_t n = strlen (trace);
  if (n + 1 < sizeof trace)
    {
      trace[n] = c;
      trace[n + 1] = '\0';
    }
}

static void run_once (void (**action) (void))
{
  void (*f) (void) = *action;
  *action = NULL;
  if (f)
    f ();
}

static void cb_a (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { note ('A'); run_once (&a_does); }
static void cb_b (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { note ('B'); run_once (&b_does); }
static void cb_c (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai) { note ('C'); }

static void reg (acc_prof_callback cb) { acc_prof_register (ev, cb, acc_reg); }
static void unreg (acc_prof_callback cb) { acc_prof_unregister (ev, cb, acc_reg); }
static void enable (acc_prof_callback cb) { acc_prof_register (ev, cb, acc_toggle); }
static void disable (acc_prof_callback cb) { acc_prof_unregister (ev, cb, acc_toggle); }

/* The actions a callback takes during the dispatch. */
static void enable_a (void) { enable (cb_a); }
static void enable_b (void) { enable (cb_b); }
static void disable_a (void) { disable (cb_a); }
static void disable_b (void) { disable (cb_b); }
static void disable_then_enable_b (void) { disable (cb_b); enable (cb_b); }
static void register_c (void) { reg (cb_c); }
static void unregister_a (void) { unreg (cb_a); }
static void unregister_b (void) { unreg (cb_b); }
static void reregister_b (void) { unreg (cb_b); reg (cb_b); }
static void disable_event (void) { acc_prof_unregister (ev, NULL, acc_toggle); }
static void disable_everything (void) { acc_prof_unregister (acc_ev_none, NULL, acc_toggle); }
static void disable_this_thread (void) { acc_prof_unregister (acc_ev_none, NULL, acc_toggle_per_thread); }

static double x[8];

/* One instance of the scenario's event (acc_copyin dispatches enter_data start and end). */
static void one_event (void)
{
  acc_copyin (x, sizeof x);
  acc_delete (x, sizeof x);
}

/* Prints the traces of `instances` events, then puts the registry back: every toggle on, A, B,
   C unregistered (an unregister of a callback that is not registered is ignored). */
static void scenario (const char *name, int instances)
{
  printf ("%s: ", name);
  for (int i = 0; i < instances; i++)
    {
      trace[0] = '\0';
      one_event ();
      printf ("%s%s", i ? " | " : "", trace);
    }
  printf ("\n");
  a_does = b_does = NULL;
  acc_prof_register (acc_ev_none, NULL, acc_toggle_per_thread);
  acc_prof_register (acc_ev_none, NULL, acc_toggle);
  acc_prof_register (ev, NULL, acc_toggle);
  for (int i = 0; i < 3; i++)
    {
      unreg (cb_a);
      unreg (cb_b);
      unreg (cb_c);
    }
}

/* Another thread switches its own callbacks off and dispatches while the main thread waits; the
   main thread dispatches while that thread is still switched off, and again after it ended. */
static pthread_barrier_t meet;

static void *off_then_dispatch (void *arg)
{
  (void) arg;
  acc_prof_unregister (acc_ev_none, NULL, acc_toggle_per_thread);
  one_event ();
  pthread_barrier_wait (&meet); /* the main thread looks at the trace and dispatches */
  pthread_barrier_wait (&meet);
  return NULL;
}

static void other_thread_off (const char *name)
{
  pthread_t t;
  trace[0] = '\0';
  pthread_barrier_init (&meet, NULL, 2);
  pthread_create (&t, NULL, off_then_dispatch, NULL);
  pthread_barrier_wait (&meet);
  printf ("%s: %s", name, trace[0] ? trace : "-");
  trace[0] = '\0';
  one_event ();
  printf (" | %s", trace);
  pthread_barrier_wait (&meet);
  pthread_join (t, NULL);
  pthread_barrier_destroy (&meet);
  trace[0] = '\0';
  one_event ();
  printf (" | %s\n", trace);
  a_does = b_does = NULL;
  unreg (cb_a);
  unreg (cb_b);
}

int main (void)
{
  acc_init (acc_device_default);

  /* Start events: the list is walked head to tail, A before B before C. */
  ev = acc_ev_enter_data_start;

  reg (cb_a); reg (cb_b); disable (cb_b); a_does = enable_b;
  scenario ("start_enable_later", 2);

  reg (cb_a); reg (cb_b); b_does = enable_a; disable (cb_a);
  scenario ("start_enable_earlier", 1);

  reg (cb_a); reg (cb_b); a_does = disable_b;
  scenario ("start_disable_later", 2);

  reg (cb_a); reg (cb_b); reg (cb_c); a_does = disable_then_enable_b;
  scenario ("start_disable_then_enable", 1);

  reg (cb_a); a_does = register_c;
  scenario ("start_register", 2);

  reg (cb_a); reg (cb_b); a_does = unregister_b;
  scenario ("start_unregister_later", 2);

  reg (cb_a); reg (cb_b); reg (cb_c); a_does = reregister_b;
  scenario ("start_reregister_moves_to_tail", 2);

  reg (cb_a); reg (cb_b); a_does = disable_event;
  scenario ("start_disable_event", 2);

  reg (cb_a); reg (cb_b); a_does = disable_everything;
  scenario ("start_disable_everything", 2);

  reg (cb_a); reg (cb_b); a_does = disable_this_thread;
  scenario ("start_disable_this_thread", 2);

  /* One callback alone (the usual case, which dispatch takes a shorter way for). */
  reg (cb_a); a_does = disable_this_thread;
  scenario ("sole_disable_this_thread", 2);

  reg (cb_a); a_does = disable_event;
  scenario ("sole_disable_event", 2);

  reg (cb_a);
  other_thread_off ("sole_other_thread_off");

  reg (cb_a); reg (cb_b);
  other_thread_off ("two_other_thread_off");

  /* End events: the list is walked tail to head, B before A. */
  ev = acc_ev_enter_data_end;

  reg (cb_a); reg (cb_b); disable (cb_a); b_does = enable_a;
  scenario ("end_enable_later", 2);

  reg (cb_a); reg (cb_b); b_does = disable_a;
  scenario ("end_disable_later", 2);

  reg (cb_a); reg (cb_b); b_does = register_c;
  scenario ("end_register", 2);

  reg (cb_a); reg (cb_b); b_does = unregister_a;
  scenario ("end_unregister_later", 2);

  reg (cb_b); b_does = register_c;
  scenario ("end_sole_register", 2);

  printf ("done\n");
  return 0;
}
