/* acc_malloc and acc_free (argv[1] picks the case):
   "malloc_zero"     acc_malloc (0) is NULL, as in GCC, and allocates nothing (no alloc event);
   "free_bytes"      the free event of acc_free carries the size of the block acc_malloc gave;
   "free_mapped"     acc_free of memory still mapped by acc_map_data is refused (an error), as
                     GCC refuses it: freed, the block served the next allocation of its size and
                     two host arrays shared one device copy;
   "free_mapped_inside"  the same with the data mapped to a later part of the block;
   "free_present"    the same for the device copy of data placed by acc_copyin;
   "free_unmapped"   acc_free after acc_unmap_data is fine;
   "d2d"             acc_memcpy_d2d and its async form copy between the device copies of two
                     present arrays on the current device (the host copies stay as they were
                     until updated).
   A tool inside the program prints "alloc <bytes>" and "free <bytes>" for those events. */
#include <openacc.h>
#include <acc_prof.h>
#include <stdio.h>
#include <string.h>

#define N 16384 /* 128 KiB: the emulated device pools freed blocks this large */

static void cb (acc_prof_info *pi, acc_event_info *ei, acc_api_info *ai)
{
  (void) ai;
  printf ("%s %zu\n", pi->event_type == acc_ev_alloc ? "alloc" : "free", ei->data_event.bytes);
}

int main (int argc, char **argv)
{
  static double a[N], b[N];
  const char *c = argc > 1 ? argv[1] : "";
  setvbuf (stdout, NULL, _IONBF, 0);
  acc_prof_register (acc_ev_alloc, cb, acc_reg);
  acc_prof_register (acc_ev_free, cb, acc_reg);
  for (int i = 0; i < N; i++)
    {
      a[i] = 1;
      b[i] = 2;
    }
  if (!strcmp (c, "malloc_zero"))
    {
      void *z = acc_malloc (0);
      printf ("acc_malloc (0) = %s\n", z ? "non-NULL" : "NULL");
      acc_free (z);
    }
  else if (!strcmp (c, "free_bytes"))
    {
      void *d = acc_malloc (1000);
      acc_free (d);
    }
  else if (!strcmp (c, "free_mapped"))
    {
      void *d = acc_malloc (sizeof a);
      acc_map_data (a, d, sizeof a);
      acc_update_device (a, sizeof a);
      acc_free (d);
      printf ("acc_free returned\n");
      /* What the accepted free led to: b's copy in the block a is still mapped to. */
      acc_copyin (b, sizeof b);
      acc_update_self (a, sizeof a);
      printf ("a[0] = %g\n", a[0]);
    }
  else if (!strcmp (c, "free_mapped_inside"))
    {
      /* Mapped to the block's second half: the block is still in use all the same. */
      char *d = acc_malloc (2 * sizeof a);
      acc_map_data (a, d + sizeof a, sizeof a);
      acc_free (d);
      printf ("acc_free returned\n");
    }
  else if (!strcmp (c, "free_present"))
    {
      acc_copyin (a, sizeof a);
      acc_free (acc_deviceptr (a));
      printf ("acc_free returned\n");
    }
  else if (!strcmp (c, "free_unmapped"))
    {
      void *d = acc_malloc (sizeof a);
      acc_map_data (a, d, sizeof a);
      acc_unmap_data (a);
      acc_free (d);
      printf ("acc_free returned\n");
    }
  else if (!strcmp (c, "d2d"))
    {
      int dev = acc_get_device_num (acc_get_device_type ());
      acc_copyin (a, sizeof a);
      acc_copyin (b, sizeof b);
      a[5] = 7; /* host only: the device copy of a still holds 1 */
      acc_memcpy_d2d (b, a, 100 * sizeof (double), dev, dev);
      acc_memcpy_d2d_async (b + 200, a + 5, 10 * sizeof (double), dev, dev, 3);
      acc_memcpy_d2d (NULL, NULL, 0, dev, dev);
      acc_wait (3);
      printf ("host b before update: %g %g\n", b[0], b[200]);
      acc_update_self (b, sizeof b);
      printf ("b[0] %g b[5] %g b[99] %g b[100] %g b[200] %g b[209] %g b[210] %g\n", b[0], b[5], b[99], b[100], b[200],
              b[209], b[210]);
    }
  printf ("done\n");
  return 0;
}
