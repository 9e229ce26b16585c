/* acc_set_cuda_stream and acc_get_cuda_stream with acc_async_sync (GCC's
   libgomp.oacc-c-c++-common/acc_set_cuda_stream-1.c): the synchronous queue's stream cannot be
   replaced, so set refuses with 0 and the program goes on. On the emulated device no queue has
   a CUDA stream, so get returns NULL (on CUDA it returns the synchronous queue's own stream).
   argv[1] "invalid" uses async -7. */
#include <openacc.h>
#include <stdio.h>
#include <string.h>

int main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  acc_init (acc_device_default);
  if (argc > 1 && !strcmp (argv[1], "invalid"))
    acc_set_cuda_stream (-7, (void *) 0x1234);
  else
    {
      printf ("get (acc_async_sync) = %s\n", acc_get_cuda_stream (acc_async_sync) ? "non-NULL" : "NULL");
      printf ("set (acc_async_sync, s) = %d\n", acc_set_cuda_stream (acc_async_sync, (void *) 0x1234));
      printf ("get (acc_async_sync) = %s\n", acc_get_cuda_stream (acc_async_sync) ? "non-NULL" : "NULL");
      printf ("set (1, s) = %d\n", acc_set_cuda_stream (1, (void *) 0x1234));
    }
  printf ("done\n");
  return 0;
}
