/* Each case makes one runtime error the specification defines; the runtime must print its
   message and end the program (never crash or carry on with corrupt data). */
#include <accshim.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double nothing (size_t b, size_t e, const accshim_val *args, void *u)
{
  (void) b, (void) e, (void) args, (void) u;
  return 0;
}

int main (int argc, char **argv)
{
  static double a[1000], b[1000];
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp (c, "not_present"))
    acc_update_device (a, sizeof a);
  else if (!strcmp (c, "partly_present"))
    {
      acc_copyin (a, 100 * sizeof (double));
      acc_copyin (a + 50, 100 * sizeof (double));
    }
  else if (!strcmp (c, "invalid_async"))
    acc_copyin_async (a, sizeof a, -7);
  else if (!strcmp (c, "invalid_wait"))
    acc_wait (-9);
  else if (!strcmp (c, "invalid_default_async"))
    acc_set_default_async (-3);
  else if (!strcmp (c, "device_unavailable"))
    acc_set_device_type (acc_device_nvidia);
  else if (!strcmp (c, "out_of_memory"))
    acc_copyin (b, sizeof b);           /* run with ACCSHIM_EMU_MEMORY=1000 */
  else if (!strcmp (c, "unmap_unmapped"))
    {
      acc_copyin (a, sizeof a);
      acc_unmap_data (a);
    }
  else if (!strcmp (c, "null_copyin"))
    acc_copyin (NULL, 8);
  else if (!strcmp (c, "null_copyout"))
    acc_copyout (NULL, 8);
  else if (!strcmp (c, "null_update"))
    acc_update_self (NULL, 800);
  /* Garbage host pointers (nothing is mapped at page 1, or in the top half of user space). */
  else if (!strcmp (c, "garbage_copyin"))
    acc_copyin ((void *) 0x1000, 800);
  else if (!strcmp (c, "garbage_update_self"))
    {
      acc_copyin (a, sizeof a);
      acc_update_self ((void *) 0x400000000000, 800);
    }
  else if (!strcmp (c, "garbage_memcpy"))
    acc_memcpy_to_device (acc_malloc (64), (void *) 0x1000, 64);
  /* Byte counts a program computed wrongly (SIZE_MAX is -1 converted): refused, never a copy
     past the end of the memory. */
  else if (!strcmp (c, "copyin_wraps"))
    acc_copyin (a, SIZE_MAX);
  else if (!strcmp (c, "map_wraps"))
    acc_map_data (a, acc_malloc (64), SIZE_MAX);
  else if (!strcmp (c, "memcpy_past_allocation"))
    acc_memcpy_to_device (acc_malloc (64), a, 128);
  else if (!strcmp (c, "memcpy_wraps"))
    acc_memcpy_from_device (a, acc_malloc (64), SIZE_MAX);
  else if (!strcmp (c, "d2d_not_present"))
    {
      acc_copyin (a, sizeof a);
      acc_memcpy_d2d (a, b, 8, 0, 0);
    }
  else if (!strcmp (c, "d2d_other_device"))
    {
      acc_copyin (a, sizeof a);
      acc_copyin (b, sizeof b);
      acc_memcpy_d2d (a, b, 8, 0, 1);
    }
  /* A NULL source or destination with bytes to copy: the error, never a copy through 0. */
  else if (!strcmp (c, "memcpy_to_null_host"))
    acc_memcpy_to_device (acc_malloc (64), NULL, 64);
  else if (!strcmp (c, "memcpy_to_null_device"))
    acc_memcpy_to_device (NULL, a, 64);
  else if (!strcmp (c, "memcpy_from_null_host"))
    acc_memcpy_from_device (NULL, acc_malloc (64), 64);
  else if (!strcmp (c, "memcpy_from_null_device_async"))
    acc_memcpy_from_device_async (a, NULL, 64, 1);
  else if (!strcmp (c, "memcpy_device_null"))
    acc_memcpy_device (acc_malloc (64), NULL, 8);
  else if (!strcmp (c, "d2d_null"))
    acc_memcpy_d2d (NULL, a, 8, 0, 0);
  else if (!strcmp (c, "memcpy_not_device"))
    acc_memcpy_device (acc_malloc (64), b, 8);
  /* The construct API given what no compiler would emit: each is reported, none is read as
     "nothing" or crashes. */
  else if (!strcmp (c, "region_ended_twice"))
    {
      void *r = ACC_DATA_BEGIN (ACC_COPY (a, 0, 10));
      ACC_DATA_END (r);
      ACC_DATA_END (r);
    }
  else if (!strcmp (c, "region_not_begun"))
    accshim_data_end (b, __LINE__);
  else if (!strcmp (c, "compute_null"))
    accshim_compute (NULL, NULL, 0);
  else if (!strcmp (c, "clauses_null"))
    accshim_enter_data (ACCSHIM_LOC (), NULL, 2, acc_async_sync, NULL, -1);
  else if (!strcmp (c, "reduction_unknown") || !strcmp (c, "reduction_null") || !strcmp (c, "argument_unknown"))
    {
      static double r;
      accshim_arg arg = { .kind = 9 };
      accshim_kernel k = { .name = "k", .work = 10, .host = nothing };
      if (!strcmp (c, "reduction_unknown"))
        k.reduction_op = 9, k.reduction_var = &r;
      else if (!strcmp (c, "reduction_null"))
        k.reduction_op = ACCSHIM_RED_SUM;
      else
        k.args = &arg, k.nargs = 1;
      ACC_PARALLEL (&k, 1, __LINE__);
    }
  else if (!strcmp (c, "ok"))
    {
      acc_copyin (a, sizeof a);
      acc_delete (a, sizeof a);
      /* A NULL data_arg with 0 bytes is no error: nothing to do. */
      acc_copyin (NULL, 0);
      acc_update_device (NULL, 0);
      acc_delete (NULL, 0);
      printf ("fine\n");
      return 0;
    }
  printf ("no error reported for %s\n", c);
  return 0;
}
