/* A C grid struct with its arrays behind pointer members, mapped member by member as C codes
   do: the struct first, then its arrays (GCC: a GOMP_MAP_STRUCT group of the pointer members,
   the arrays, and attachments), released member by member at the end. Then a section that does
   not start where its pointer points (an attachment with a bias), and the whole struct mapped
   after its members. */
#include <stdio.h>
#include <stdlib.h>

typedef struct
{
  int nx, ny;
  double dx;
  double *u, *unew;
} grid;

typedef struct
{
  double *a, *b;
} pair;

static void relax (grid *g, int iters)
{
  int nx = g->nx, ny = g->ny;
  for (int it = 0; it < iters; it++)
    {
#pragma acc parallel loop collapse(2) present(g[0:1])
      for (int j = 1; j < ny - 1; j++)
        for (int i = 1; i < nx - 1; i++)
          g->unew[j * nx + i] = 0.25 * (g->u[j * nx + i - 1] + g->u[j * nx + i + 1]
                                        + g->u[(j - 1) * nx + i] + g->u[(j + 1) * nx + i]);
#pragma acc parallel loop collapse(2) present(g[0:1])
      for (int j = 1; j < ny - 1; j++)
        for (int i = 1; i < nx - 1; i++)
          g->u[j * nx + i] = g->unew[j * nx + i];
    }
}

int main (void)
{
  grid g = { 64, 32, 0.5, 0, 0 };
  int n = g.nx * g.ny;
  g.u = malloc (n * sizeof (double));
  g.unew = malloc (n * sizeof (double));
  for (int i = 0; i < n; i++)
    g.u[i] = g.unew[i] = (i % g.nx == 0) ? 100.0 : 0.0;

#pragma acc enter data copyin(g)
#pragma acc enter data copyin(g.u[0:n]) create(g.unew[0:n])
  relax (&g, 50);
#pragma acc exit data copyout(g.u[0:n]) delete(g.unew[0:n])
#pragma acc exit data delete(g)
  double s = 0;
  for (int i = 0; i < n; i++)
    s += g.u[i];
  printf ("relaxed: %.6f\n", s);

  /* A section starting 2 elements after where the pointer points. */
  grid h = { 8, 8, 1.0, malloc (64 * sizeof (double)), 0 };
  for (int i = 0; i < 64; i++)
    h.u[i] = i;
#pragma acc enter data copyin(h.u[2:60], h.nx)
  int f = h.nx;
#pragma acc parallel loop present(h.u[2:60])
  for (int i = 2; i < 62; i++)
    h.u[i] *= f;
#pragma acc exit data copyout(h.u[2:60], h.nx)
  printf ("biased: %g %g %g\n", h.u[1], h.u[2], h.u[61]);

  /* The members first, then the whole struct: present, as its members hold all of it. */
  pair k = { malloc (16 * sizeof (double)), malloc (16 * sizeof (double)) };
  for (int i = 0; i < 16; i++)
    k.a[i] = i, k.b[i] = 0;
#pragma acc enter data copyin(k.a[0:16], k.b[0:16])
#pragma acc enter data copyin(k)
#pragma acc parallel loop present(k)
  for (int i = 0; i < 16; i++)
    k.b[i] = k.a[i] * 2;
#pragma acc exit data copyout(k.b[0:16]) delete(k.a[0:16])
#pragma acc exit data delete(k)
  printf ("members then struct: %g %g\n", k.b[1], k.b[15]);
  free (g.u), free (g.unew), free (h.u), free (k.a), free (k.b);
  return 0;
}
