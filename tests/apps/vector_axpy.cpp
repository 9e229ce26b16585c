// std::vectors whose data a kernel in a function the time loop (one line) calls moves on every
// call: named by their data (`x.data()[0:n]`, from the declaration their allocation is inlined
// from), and the advised region around that loop keeps them on the device through pointers the
// advice declares, since a clause takes no std::vector. Prints a checksum.
#include <cstdio>
#include <vector>

static void axpy(double a, const double *x, double *y, int n)
{
#pragma acc parallel loop copyin(x[0:n]) copy(y[0:n])
    for (int i = 0; i < n; i++)
        y[i] += a * x[i];
}

int main()
{
    const int n = 1 << 15;
    std::vector<double> x(n, 1.0), y(n, 0.0);
    for (int i = 0; i < n; i++)
        x[i] = i % 11;
    for (int step = 0; step < 20; step++) axpy(0.5, x.data(), y.data(), n);
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += y[i];
    std::printf("vector_axpy checksum %.6f\n", sum);
    return 0;
}
