/* The same directives three ways into the runtime: as GCC compiles the pragmas (its GOACC_*
   entry points), through the construct API (accshim.h, what a hand-lowering compiler would
   call), and, for the data directives, through the acc_* routines that do the same. Run as
   `three_ways WAY PART`, WAY one of directive, construct, routine, PART `data` (enter data,
   update, async update and wait, attach and detach, exit data: one variable each, which a
   routine names) or
   `constructs` (a data construct with a compute construct in it, an async compute construct
   and its wait: no routine does these). A tool records the events; the test compares them. */
#include <accshim.h>
#include <stdio.h>
#include <string.h>

#define N 1000
static double a[N], b[N];
static double *p = b;

static double add_one (size_t begin, size_t end, const accshim_val *args, void *user)
{
  (void) user;
  double *x = args[0].p;
  for (size_t i = begin; i < end; i++)
    x[i] += 1;
  return 0;
}

static void data_part (const char *way)
{
  if (!strcmp (way, "directive"))
    {
#pragma acc enter data copyin(a)
#pragma acc enter data create(b)
#pragma acc update device(a)
#pragma acc update self(a) async(1)
#pragma acc wait(1)
#pragma acc enter data copyin(p)
#pragma acc enter data attach(p)
#pragma acc exit data detach(p)
#pragma acc exit data delete(p)
#pragma acc exit data copyout(b)
#pragma acc exit data delete(a)
    }
  else if (!strcmp (way, "construct"))
    {
      ACC_ENTER_DATA (ACC_COPYIN (a, 0, N));
      ACC_ENTER_DATA (ACC_CREATE (b, 0, N));
      ACC_UPDATE (ACC_UPDATE_DEVICE (a, 0, N));
      ACC_UPDATE_ASYNC (1, ACC_UPDATE_SELF (a, 0, N));
      ACC_WAIT (1);
      ACC_ENTER_DATA (((accshim_clause){ ACCSHIM_COPYIN, 0, &p, sizeof p, "p" }));
      ACC_ENTER_DATA (((accshim_clause){ ACCSHIM_ATTACH, 0, &p, sizeof p, "p" }));
      ACC_EXIT_DATA (((accshim_clause){ ACCSHIM_DETACH, 0, &p, sizeof p, "p" }));
      ACC_EXIT_DATA (((accshim_clause){ ACCSHIM_DELETE, 0, &p, sizeof p, "p" }));
      ACC_EXIT_DATA (ACC_COPYOUT (b, 0, N));
      ACC_EXIT_DATA (ACC_DELETE (a, 0, N));
    }
  else
    {
      acc_copyin (a, sizeof a);
      acc_create (b, sizeof b);
      acc_update_device (a, sizeof a);
      acc_update_self_async (a, sizeof a, 1);
      acc_wait (1);
      acc_copyin (&p, sizeof p);
      acc_attach ((void **) &p);
      acc_detach ((void **) &p);
      acc_delete (&p, sizeof p);
      acc_copyout (b, sizeof b);
      acc_delete (a, sizeof a);
    }
}

static void constructs_part (const char *way)
{
  if (!strcmp (way, "directive"))
    {
#pragma acc data copy(a) create(b)
      {
#pragma acc parallel loop present(a)
        for (int i = 0; i < N; i++)
          a[i] += 1;
      }
#pragma acc parallel loop copy(a) async(2)
      for (int i = 0; i < N; i++)
        a[i] += 1;
#pragma acc wait(2)
    }
  else
    {
      accshim_arg args[] = { ACC_ARG_PRESENT (a) };
      accshim_kernel k = { .name = "add_one", .work = N, .host = add_one, .args = args,
                           .nargs = 1 };
      /* The clauses in the order GCC passes them (it reverses them). */
      void *r = ACC_DATA_BEGIN (ACC_CREATE (b, 0, N), ACC_COPY (a, 0, N));
      ACC_PARALLEL (&k, 1, __LINE__, .clauses = (accshim_clause[]){ ACC_PRESENT (a, 0, N) },
                    .nclauses = 1);
      ACC_DATA_END (r);
      ACC_PARALLEL (&k, 1, __LINE__, .clauses = (accshim_clause[]){ ACC_COPY (a, 0, N) },
                    .nclauses = 1, .async_ = 2);
      ACC_WAIT (2);
    }
}

int main (int argc, char **argv)
{
  if (argc != 3)
    return 2;
  if (!strcmp (argv[2], "data"))
    data_part (argv[1]);
  else
    constructs_part (argv[1]);
  printf ("a[1] = %g\n", a[1]);
  return 0;
}
