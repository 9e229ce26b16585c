/* What a test program reads about its own process from /proc/self: its thread count and its
   memory (a /proc/self/status field in KiB), to check that the runtime ends the threads and
   frees the memory it no longer needs. */
#ifndef PROC_SELF_H
#define PROC_SELF_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int proc_threads (void)
{
  int n = 0;
  DIR *d = opendir ("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir (d)))
    if (e->d_name[0] != '.')
      n++;
  if (d)
    closedir (d);
  return n;
}

/* field: "VmRSS:" (resident) or "VmSize:" (address space); -1 if absent. */
static inline long proc_status_kib (const char *field)
{
  char line[256];
  long kib = -1;
  size_t len = strlen (field);
  FILE *f = fopen ("/proc/self/status", "r");
  while (f && fgets (line, sizeof line, f))
    if (!strncmp (line, field, len))
      kib = atol (line + len);
  if (f)
    fclose (f);
  return kib;
}
#endif
