/* The seeds' Laplace 2D case study in C, hand-lowered to accshim's construct API.
   Build: gcc -O2 -I runtime-shim/include laplace.c -L target/release -laccshim -lm
   Run:   ./laplace [naive|data] [n] [iters]          (defaults: data 256 100) */
#include <accshim.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *STENCIL_CU =
  "extern \"C\" __global__ void laplace_stencil_c(const double *A, double *Anew, long long n, long long m, double *err) {\n"
  "  unsigned int w = (unsigned int)(m - 2), interior = (unsigned int)((n - 2) * (m - 2));\n"
  "  double local = 0.0;\n"
  "  for (unsigned int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < interior; idx += gridDim.x * blockDim.x) {\n"
  "    unsigned int j = idx / w + 1, i = idx % w + 1; size_t c = (size_t)j * m + i;\n"
  "    double v = 0.25 * (A[c + 1] + A[c - 1] + A[c - m] + A[c + m]);\n"
  "    Anew[c] = v; local = fmax(local, fabs(v - A[c]));\n"
  "  }\n"
  "  accshim_reduce_max(err, local);\n"
  "}\n";

static const char *COPY_CU =
  "extern \"C\" __global__ void laplace_copy_c(double *A, const double *Anew, long long n, long long m) {\n"
  "  unsigned int w = (unsigned int)(m - 2), interior = (unsigned int)((n - 2) * (m - 2));\n"
  "  for (unsigned int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < interior; idx += gridDim.x * blockDim.x) {\n"
  "    unsigned int j = idx / w + 1, i = idx % w + 1; size_t c = (size_t)j * m + i;\n"
  "    A[c] = Anew[c];\n"
  "  }\n"
  "}\n";

/* Host kernels: iterations [b, e) of the flattened interior. */
static double stencil_host (size_t b, size_t e, const accshim_val *a, void *user)
{
  (void) user;
  const double *A = a[0].p; double *Anew = a[1].p; size_t m = (size_t) a[3].i, w = m - 2;
  double err = 0.0;
  for (size_t idx = b; idx < e; idx++)
    {
      size_t j = idx / w + 1, i = idx % w + 1, c = j * m + i;
      Anew[c] = 0.25 * (A[c + 1] + A[c - 1] + A[c - m] + A[c + m]);
      err = fmax (err, fabs (Anew[c] - A[c]));
    }
  return err;
}

static double copy_host (size_t b, size_t e, const accshim_val *a, void *user)
{
  (void) user;
  double *A = a[0].p; const double *Anew = a[1].p; size_t m = (size_t) a[3].i, w = m - 2;
  for (size_t idx = b; idx < e; idx++)
    {
      size_t j = idx / w + 1, i = idx % w + 1, c = j * m + i;
      A[c] = Anew[c];
    }
  return 0.0;
}

int main (int argc, char **argv)
{
  int naive = argc > 1 && strcmp (argv[1], "naive") == 0;
  int n = argc > 2 ? atoi (argv[2]) : 256, m = n;
  int iter_max = argc > 3 ? atoi (argv[3]) : 100;
  double tol = 1.0e-6, error = 1.0;
  double *A = calloc ((size_t) n * m, sizeof *A), *Anew = calloc ((size_t) n * m, sizeof *Anew);
  for (int j = 0; j < n; j++)
    A[j * m] = Anew[j * m] = 1.0;
  printf ("Jacobi relaxation Calculation: %d x %d mesh (%s version, C)\n", n, m, naive ? "naive" : "data");

  accshim_arg args[] = { ACC_ARG_PRESENT (A), ACC_ARG_PRESENT (Anew), ACC_ARG_INT (n), ACC_ARG_INT (m) };
  accshim_kernel k[2] = {
    { .name = "laplace_stencil_c", .work = (size_t) (n - 2) * (m - 2), .host = stencil_host,
      .cuda_src = STENCIL_CU, .args = args, .nargs = 4, .reduction_op = ACCSHIM_RED_MAX,
      .reduction_var = &error, .reduction_name = "error" },
    { .name = "laplace_copy_c", .work = (size_t) (n - 2) * (m - 2), .host = copy_host,
      .cuda_src = COPY_CU, .args = args, .nargs = 4 },
  };
  accshim_clause implicit[] = { ACC_IMPLICIT (ACC_COPY (A, 0, n*m)), ACC_IMPLICIT (ACC_COPY (Anew, 0, n*m)) };

  void *region = naive ? NULL : ACC_DATA_BEGIN (ACC_COPY (A, 0, n*m), ACC_CREATE (Anew, 0, n*m));
  int iter = 0;
  while (error > tol && iter < iter_max)
    {
      error = 0.0;
      ACC_KERNELS (k, 2, __LINE__ + 1, .clauses = implicit, .nclauses = 2);
      if (iter % 100 == 0)
        printf ("%5d, %0.6f\n", iter, error);
      iter++;
    }
  if (region)
    ACC_DATA_END (region);
  double sum = 0.0;
  for (size_t i = 0; i < (size_t) n * m; i++)
    sum += A[i];
  printf (" iterations: %d\n checksum: %.6f\n", iter, sum);
  free (A);
  free (Anew);
  return 0;
}
