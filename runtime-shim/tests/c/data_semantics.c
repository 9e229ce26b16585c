/* Present-table and attachment semantics through the C API and the construct API, one case per
   argv[1]. Each case prints "ok" and returns 0 when the runtime behaves as the specification
   (and GCC's runtime) do, or prints what went wrong and returns 1. The emulated device keeps
   device memory in host memory, so a case may read a device address directly. */
#include <accshim.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct S { double *p; long n; };

/* The value of the device copy of the pointer at host address `pp`. */
static void *device_pointer (void **pp)
{
  void *v;
  acc_memcpy_from_device (&v, acc_deviceptr (pp), sizeof v);
  return v;
}

#define EXPECT(cond, ...)                                                      \
  do                                                                           \
    if (!(cond))                                                               \
      {                                                                        \
        printf (__VA_ARGS__);                                                  \
        printf ("\n");                                                         \
        return 1;                                                              \
      }                                                                        \
  while (0)

/* Two threads map the same large array at once; the one that finds it present must not see
   the device copy before the other has uploaded it. */
#define RACE_N (8u << 20)
static double *race_a, race_want;
static pthread_barrier_t race_bar;
static int race_stale;

static void *race_thread (void *arg)
{
  (void) arg;
  pthread_barrier_wait (&race_bar);
  double *d = acc_copyin (race_a, RACE_N * sizeof (double));
  double v;
  acc_memcpy_from_device (&v, d + RACE_N - 1, sizeof v); /* uploaded last */
  if (v != race_want)
    __atomic_add_fetch (&race_stale, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static int concurrent_copyin (void)
{
  race_a = malloc (RACE_N * sizeof (double));
  acc_init (acc_device_default);
  for (int t = 0; t < 10; t++)
    {
      race_want = 42 + t; /* a new value each round: stale device memory cannot pass */
      for (size_t i = 0; i < RACE_N; i++)
        race_a[i] = race_want;
      pthread_t th[2];
      pthread_barrier_init (&race_bar, NULL, 2);
      for (int i = 0; i < 2; i++)
        pthread_create (&th[i], NULL, race_thread, NULL);
      for (int i = 0; i < 2; i++)
        pthread_join (th[i], NULL);
      pthread_barrier_destroy (&race_bar);
      acc_delete_finalize (race_a, RACE_N * sizeof (double));
    }
  EXPECT (race_stale == 0, "%d threads read the device copy before it was uploaded", race_stale);
  return 0;
}

/* acc_copyout of a section copies back that section only. */
static int copyout_section (void)
{
  static double a[100];
  for (int i = 0; i < 100; i++)
    a[i] = 1;
  acc_copyin (a, sizeof a);
  for (int i = 0; i < 100; i++)
    a[i] = 2;
  acc_copyout (a + 50, 10 * sizeof (double));
  EXPECT (a[0] == 2 && a[60] == 2, "outside the section: a[0] = %g, a[60] = %g (expect 2)", a[0], a[60]);
  EXPECT (a[50] == 1 && a[59] == 1, "the section: a[50] = %g, a[59] = %g (expect 1)", a[50], a[59]);
  return 0;
}

/* A data construct's copyout(a[50:10]) of data that acc_create mapped whole. */
static int region_copyout_section (void)
{
  static double a[100];
  acc_create (a, sizeof a); /* device copy never written outside a[50:10] */
  void *r = ACC_DATA_BEGIN (ACC_COPYOUT (a, 50, 10));
  acc_delete (a, sizeof a); /* the region holds the last reference */
  for (int i = 0; i < 100; i++)
    a[i] = 7;
  acc_memcpy_to_device (acc_deviceptr (a + 50), a + 50, 10 * sizeof (double));
  ACC_DATA_END (r);
  EXPECT (a[0] == 7 && a[99] == 7, "outside copyout(a[50:10]): a[0] = %g, a[99] = %g (expect 7)", a[0], a[99]);
  return 0;
}

/* exit data copyout(s) detach(s.p): the detach happens first, whatever the order written. */
static int detach_before_copyout (void)
{
  static double data[16];
  static struct S s;
  s.p = data;
  accshim_clause enter[] = {
    { ACCSHIM_COPYIN, 0, &s, sizeof s, "s" },
    { ACCSHIM_COPYIN, 0, data, sizeof data, "data[0:16]" },
    { ACCSHIM_ATTACH, 0, &s.p, sizeof s.p, "s.p" },
  };
  accshim_enter_data (ACCSHIM_LOC (), enter, 3, acc_async_sync, 0, -1);
  EXPECT (device_pointer ((void **) &s.p) == acc_deviceptr (data), "attached: the device s.p is not data's device copy");
  accshim_clause exit_[] = {
    { ACCSHIM_COPYOUT, 0, &s, sizeof s, "s" },
    { ACCSHIM_DETACH, 0, &s.p, sizeof s.p, "s.p" },
    { ACCSHIM_DELETE, 0, data, sizeof data, "data[0:16]" },
  };
  accshim_exit_data (ACCSHIM_LOC (), exit_, 3, acc_async_sync, 0, -1, 0);
  EXPECT (s.p == data, "after exit data: host s.p = %p (expect %p)", (void *) s.p, (void *) data);
  return 0;
}

/* enter data attach(s.p) copyin(s) copyin(data): attachments after the copies. */
static int attach_after_copyin (void)
{
  static double data[16];
  static struct S s;
  s.p = data;
  accshim_clause enter[] = {
    { ACCSHIM_ATTACH, 0, &s.p, sizeof s.p, "s.p" },
    { ACCSHIM_COPYIN, 0, &s, sizeof s, "s" },
    { ACCSHIM_COPYIN, 0, data, sizeof data, "data[0:16]" },
  };
  accshim_enter_data (ACCSHIM_LOC (), enter, 3, acc_async_sync, 0, -1);
  EXPECT (device_pointer ((void **) &s.p) == acc_deviceptr (data), "the device s.p is not data's device copy");
  return 0;
}

/* Attaching a pointer again after it was pointed at another array attaches the new target. */
static int reattach_new_target (void)
{
  static double d1[8], d2[8];
  static struct S s;
  acc_copyin (&s, sizeof s);
  acc_copyin (d1, sizeof d1);
  acc_copyin (d2, sizeof d2);
  s.p = d1;
  acc_attach ((void **) &s.p);
  s.p = d2;
  acc_attach ((void **) &s.p);
  EXPECT (device_pointer ((void **) &s.p) == acc_deviceptr (d2), "the device s.p still points to d1's copy");
  /* Attached once to d2 (the count started again at one): one detach restores the host value. */
  acc_detach ((void **) &s.p);
  EXPECT (device_pointer ((void **) &s.p) == (void *) d2, "after one detach the device s.p is not the host value");
  return 0;
}

/* A NULL pointer attaches as NULL. */
static int attach_null (void)
{
  static struct S s = { NULL, 0 };
  acc_copyin (&s, sizeof s);
  acc_attach ((void **) &s.p);
  EXPECT (device_pointer ((void **) &s.p) == NULL, "the device copy of a NULL pointer is not NULL");
  acc_detach ((void **) &s.p);
  acc_delete (&s, sizeof s);
  return 0;
}

/* Deleting an attached pointer's target gives the device pointer its host value back. */
static int target_deleted (void)
{
  static double data[16];
  static struct S s;
  s.p = data;
  acc_copyin (&s, sizeof s);
  acc_copyin (data, sizeof data);
  acc_attach ((void **) &s.p);
  acc_delete (data, sizeof data);
  acc_copyout (&s, sizeof s);
  EXPECT (s.p == data, "host s.p = %p (expect %p)", (void *) s.p, (void *) data);
  return 0;
}

/* Copying out data that holds an attached pointer (no detach written) keeps the host value. */
static int copyout_attached (void)
{
  static double data[16];
  static struct S s;
  s.p = data;
  acc_copyin (&s, sizeof s);
  acc_copyin (data, sizeof data);
  acc_attach ((void **) &s.p);
  acc_copyout (&s, sizeof s);
  EXPECT (s.p == data, "host s.p = %p (expect %p)", (void *) s.p, (void *) data);
  acc_delete (data, sizeof data);
  return 0;
}

/* A zero-length section maps nothing and leaves nothing behind. */
static int zero_length (void)
{
  static double a[100];
  int n = 0;
  ACC_ENTER_DATA (ACC_COPYIN (a, 0, n));
  EXPECT (!acc_is_present (a, 8), "a is present after copyin(a[0:0])");
  acc_copyin (a, sizeof a); /* partly present if a[0:0] had left an entry */
  ACC_EXIT_DATA (ACC_DELETE (a, 0, n)); /* takes no reference away */
  EXPECT (acc_is_present (a, sizeof a), "delete(a[0:0]) removed a");
  acc_delete (a, sizeof a);
  EXPECT (!acc_is_present (a, sizeof a), "a is still present");
  return 0;
}

/* parallel no_create(x) of absent data: the kernel gets x's local address. */
static const void *seen;
static double k_note (size_t b, size_t e, const accshim_val *args, void *u)
{
  (void) b, (void) e, (void) u;
  seen = args[0].p;
  return 0;
}

static int no_create_argument (void)
{
  static double x[16];
  accshim_arg args[] = { ACC_ARG_PRESENT (x) };
  accshim_kernel k = { .name = "k_note", .work = 1, .host = k_note, .args = args, .nargs = 1 };
  accshim_clause cl[] = { ACC_NO_CREATE (x, 0, 16) };
  ACC_PARALLEL (&k, 1, __LINE__, .clauses = cl, .nclauses = 1);
  EXPECT (seen == x, "the kernel got %p (expect the local address %p)", seen, (void *) x);
  return 0;
}

/* One device block mapped to two host arrays: an error (the program aborts). */
static int map_twice (void)
{
  static double a[64], b[64];
  void *d = acc_malloc (sizeof a);
  acc_map_data (a, d, sizeof a);
  acc_map_data (b, d, sizeof b);
  printf ("the second acc_map_data of one device block returned\n");
  return 1;
}

int main (int argc, char **argv)
{
  static const struct { const char *name; int (*run) (void); } cases[] = {
    { "concurrent_copyin", concurrent_copyin },
    { "copyout_section", copyout_section },
    { "region_copyout_section", region_copyout_section },
    { "detach_before_copyout", detach_before_copyout },
    { "attach_after_copyin", attach_after_copyin },
    { "reattach_new_target", reattach_new_target },
    { "attach_null", attach_null },
    { "target_deleted", target_deleted },
    { "copyout_attached", copyout_attached },
    { "zero_length", zero_length },
    { "no_create_argument", no_create_argument },
    { "map_twice", map_twice },
  };
  setvbuf (stdout, NULL, _IONBF, 0);
  for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
    if (!strcmp (argv[1], cases[i].name))
      {
        int r = cases[i].run ();
        if (r == 0)
          printf ("ok\n");
        return r;
      }
  fprintf (stderr, "usage: %s CASE\n", argv[0]);
  return 2;
}
