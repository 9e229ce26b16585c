/* accshim.h: the construct API of libaccshim.so, for hand-lowered OpenACC directives in C.
   Each call is what a compiler emits for one directive; the runtime dispatches the profiling
   events the specification places there (see runtime-shim/README.md). The macros fill the
   source location (__FILE__, __func__, __LINE__) and the clause text ("A[0:n]").

   Example (the Laplace data region):
     void *r = ACC_DATA_BEGIN(ACC_COPY(A, 0, n*m), ACC_CREATE(Anew, 0, n*m));
     ... ACC_COMPUTE(ACCSHIM_KERNELS, kernels, 2, __LINE__ + 3, .clauses = cl, .nclauses = 2);
     ACC_DATA_END(r);
*/
#ifndef ACCSHIM_H
#define ACCSHIM_H 1

#include <stddef.h>
#include <openacc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a construct is: file, function, line of the directive, line of its end, and the
   enclosing function's line range (-1 when unknown). */
typedef struct accshim_loc {
  const char *file;
  const char *func;
  int line, end_line, func_line, func_end_line;
} accshim_loc;

/* Compute constructs (the acc_construct_t numbers of acc_prof.h). */
enum { ACCSHIM_PARALLEL = 0, ACCSHIM_KERNELS = 1, ACCSHIM_SERIAL = 16 };

/* Data clauses. */
enum {
  ACCSHIM_COPY = 0, ACCSHIM_COPYIN = 1, ACCSHIM_COPYOUT = 2, ACCSHIM_CREATE = 3,
  ACCSHIM_PRESENT = 4, ACCSHIM_NO_CREATE = 5, ACCSHIM_DEVICEPTR = 6, ACCSHIM_DELETE = 7,
  ACCSHIM_ATTACH = 8, ACCSHIM_DETACH = 9, ACCSHIM_UPDATE_DEVICE = 10, ACCSHIM_UPDATE_SELF = 11
};

/* One variable of a data clause: its section's host address and size, and its text. The text
   must be a string that lives for the whole program (the macros pass literals). implicit = 1
   marks data attributes the compiler determined (events report implicit = 1). */
typedef struct accshim_clause {
  int kind;
  int implicit;
  const void *host;
  size_t bytes;
  const char *name;
} accshim_clause;

/* Kernel arguments: 8 bytes each. kind 0: host address inside present data (the kernel gets the
   device address); 1: device address as is; 2: long long; 3: double. */
typedef union accshim_val { void *p; long long i; double d; } accshim_val;
typedef struct accshim_arg { int kind; int pad_; accshim_val v; } accshim_arg;

/* A host kernel runs iterations [begin, end) of the loop with the translated arguments and
   returns its partial reduction value (ignored without a reduction). */
typedef double (*accshim_host_fn) (size_t begin, size_t end, const accshim_val *args, void *user);

enum { ACCSHIM_RED_NONE = 0, ACCSHIM_RED_SUM = 1, ACCSHIM_RED_MAX = 2, ACCSHIM_RED_MIN = 3 };

/* A kernel: `work` loop iterations, a host implementation (emulated device) and/or CUDA C source
   (entry point = name; parameters = the args, then `double *` for a reduction; the helpers
   accshim_reduce_{sum,max,min}(double *cell, double v) are predefined). */
typedef struct accshim_kernel {
  const char *name;
  size_t work;
  accshim_host_fn host;
  void *user;
  const char *cuda_src;
  const accshim_arg *args;
  int nargs;
  int reduction_op;
  double *reduction_var;
  const char *reduction_name;
} accshim_kernel;

/* A compute construct (acc_construct_parallel = 0, kernels = 1, serial = 16, as in acc_prof.h).
   num_gangs/num_workers/vector_length 0 = not given. nwaits -1: no wait clause; 0: `wait`. */
typedef struct accshim_compute_t {
  int construct;
  const accshim_loc *loc;
  const accshim_clause *clauses;
  int nclauses;
  int num_gangs, num_workers, vector_length;
  long long async_;
  int nwaits;
  const long long *waits;
} accshim_compute_t;

void *accshim_data_begin (const accshim_loc *, const accshim_clause *, int);
void accshim_data_end (void *region, int end_line);
void accshim_enter_data (const accshim_loc *, const accshim_clause *, int, long long async_,
                         const long long *waits, int nwaits);
void accshim_exit_data (const accshim_loc *, const accshim_clause *, int, long long async_,
                        const long long *waits, int nwaits, int finalize);
void accshim_update (const accshim_loc *, const accshim_clause *, int, long long async_,
                     const long long *waits, int nwaits, int if_present);
void accshim_wait (const accshim_loc *, const long long *queues, int n, long long async_);
void accshim_compute (const accshim_compute_t *, const accshim_kernel *, int nkernels);

/* ---- macros ---- */
#define ACCSHIM_LOC_END(end) (&(const accshim_loc){ __FILE__, __func__, __LINE__, (end), -1, -1 })
#define ACCSHIM_LOC() ACCSHIM_LOC_END(__LINE__)

/* Clauses over the section arr[start:len] ("arr[start:len]" is the name the events report). */
#define ACCSHIM_SEC(kind, arr, start, len) \
  ((accshim_clause){ (kind), 0, (const void *) &(arr)[start], (size_t) (len) * sizeof ((arr)[0]), \
                     #arr "[" #start ":" #len "]" })
#define ACC_COPY(a, s, n) ACCSHIM_SEC (ACCSHIM_COPY, a, s, n)
#define ACC_COPYIN(a, s, n) ACCSHIM_SEC (ACCSHIM_COPYIN, a, s, n)
#define ACC_COPYOUT(a, s, n) ACCSHIM_SEC (ACCSHIM_COPYOUT, a, s, n)
#define ACC_CREATE(a, s, n) ACCSHIM_SEC (ACCSHIM_CREATE, a, s, n)
#define ACC_PRESENT(a, s, n) ACCSHIM_SEC (ACCSHIM_PRESENT, a, s, n)
#define ACC_NO_CREATE(a, s, n) ACCSHIM_SEC (ACCSHIM_NO_CREATE, a, s, n)
#define ACC_DELETE(a, s, n) ACCSHIM_SEC (ACCSHIM_DELETE, a, s, n)
#define ACC_UPDATE_DEVICE(a, s, n) ACCSHIM_SEC (ACCSHIM_UPDATE_DEVICE, a, s, n)
#define ACC_UPDATE_SELF(a, s, n) ACCSHIM_SEC (ACCSHIM_UPDATE_SELF, a, s, n)
/* The same clause marked as determined by the compiler. */
#define ACC_IMPLICIT(c) ((accshim_clause){ (c).kind, 1, (c).host, (c).bytes, (c).name })

#define ACCSHIM_CLAUSES(...) ((const accshim_clause[]){ __VA_ARGS__ })
#define ACCSHIM_NCLAUSES(...) ((int) (sizeof ((accshim_clause[]){ __VA_ARGS__ }) / sizeof (accshim_clause)))

/* #pragma acc data <clauses> { ... }  ->  void *r = ACC_DATA_BEGIN(...); ...; ACC_DATA_END(r); */
#define ACC_DATA_BEGIN(...) \
  accshim_data_begin (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__))
#define ACC_DATA_END(r) accshim_data_end ((r), __LINE__)

#define ACC_ENTER_DATA(...) \
  accshim_enter_data (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__), acc_async_sync, 0, -1)
#define ACC_ENTER_DATA_ASYNC(q, ...) \
  accshim_enter_data (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__), (q), 0, -1)
#define ACC_EXIT_DATA(...) \
  accshim_exit_data (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__), acc_async_sync, 0, -1, 0)
#define ACC_EXIT_DATA_FINALIZE(...) \
  accshim_exit_data (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__), acc_async_sync, 0, -1, 1)
#define ACC_UPDATE(...) \
  accshim_update (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__), acc_async_sync, 0, -1, 0)
#define ACC_UPDATE_ASYNC(q, ...) \
  accshim_update (ACCSHIM_LOC (), ACCSHIM_CLAUSES (__VA_ARGS__), ACCSHIM_NCLAUSES (__VA_ARGS__), (q), 0, -1, 0)
/* #pragma acc wait  /  #pragma acc wait(q) */
#define ACC_WAIT_ALL() accshim_wait (ACCSHIM_LOC (), 0, -1, acc_async_sync)
#define ACC_WAIT(q) accshim_wait (ACCSHIM_LOC (), (const long long[]){ (q) }, 1, acc_async_sync)

/* Kernel arguments. */
#define ACC_ARG_PRESENT(ptr_) ((accshim_arg){ 0, 0, { .p = (void *) (ptr_) } })
#define ACC_ARG_DEVICE(ptr_) ((accshim_arg){ 1, 0, { .p = (void *) (ptr_) } })
#define ACC_ARG_INT(x) ((accshim_arg){ 2, 0, { .i = (long long) (x) } })
#define ACC_ARG_DOUBLE(x) ((accshim_arg){ 3, 0, { .d = (double) (x) } })

/* A compute construct with its kernels; end = line of its end; further fields of
   accshim_compute_t as designated initialisers (.clauses, .nclauses, .async_, .num_gangs, ...). */
#define ACC_PARALLEL(k, nk, end, ...) ACC_COMPUTE (ACCSHIM_PARALLEL, k, nk, end, __VA_ARGS__)
#define ACC_KERNELS(k, nk, end, ...) ACC_COMPUTE (ACCSHIM_KERNELS, k, nk, end, __VA_ARGS__)
#define ACC_COMPUTE(construct_, kernels_, nkernels_, end_, ...) \
  accshim_compute (&(const accshim_compute_t){ .construct = (construct_), .loc = ACCSHIM_LOC_END (end_), \
                                             .async_ = acc_async_sync, .nwaits = -1, __VA_ARGS__ }, \
                   (kernels_), (nkernels_))

#ifdef __cplusplus
}
#endif

#endif /* ACCSHIM_H */
