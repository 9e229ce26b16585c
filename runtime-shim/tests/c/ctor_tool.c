/* A tool that registers from its constructor, before the runtime initialises, by finding
   acc_prof_register with dlsym (what a preloaded tool does with GCC). It has no
   acc_register_library. At exit it writes how many compute constructs it saw. */
#define _GNU_SOURCE
#include <acc_prof.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static int constructs, shutdowns;
static void cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ei; (void) ai;
  if (pi->event_type == acc_ev_compute_construct_start) constructs++;
  if (pi->event_type == acc_ev_runtime_shutdown) shutdowns++;
}

static void report (void)
{
  const char *p = getenv ("CTOR_TOOL_OUT");
  FILE *f = p ? fopen (p, "w") : NULL;
  if (f) { fprintf (f, "constructs=%d shutdowns=%d\n", constructs, shutdowns); fclose (f); }
}

__attribute__ ((constructor)) static void init (void)
{
  acc_prof_reg reg = (acc_prof_reg) dlsym (RTLD_DEFAULT, "acc_prof_register");
  if (!reg) return;
  reg (acc_ev_compute_construct_start, cb, acc_reg);
  reg (acc_ev_runtime_shutdown, cb, acc_reg);
  atexit (report);
}
