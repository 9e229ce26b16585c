// C++ templates across two translation units: Grid<double> is instantiated
// here, Grid<float> in stencil_float.cpp; both run the same templated
// `data`/`parallel loop`/`kernels` constructs. Prints a deterministic checksum
// (the float sum is rounded to 3 decimals so every compiler agrees).
#include <cmath>
#include <cstdio>

#include "stencil.hpp"

double run_double(std::size_t n, int steps)
{
    Grid<double> g(n);
    g.smooth(steps, 0.25);
    return g.total();
}

int main()
{
    const std::size_t n = 1 << 16;
    const double d = run_double(n, 20);
    const double f = run_float(n, 20);
    std::printf("stencil double %.6f float %.3f\n", d, std::round(f * 1000.0) / 1000.0);
    return 0;
}
