// Templated 1-D grid with an OpenACC stencil inside a member template: the
// `parallel loop present(...)` and the `kernels` reduction below are compiled
// once per instantiation (float and double, one per .cpp file), so one source
// line maps to two constructs in two translation units.
#ifndef APPS_STENCIL_HPP
#define APPS_STENCIL_HPP

#include <cstddef>

template <typename T>
class Grid {
public:
    explicit Grid(std::size_t n) : n_(n), u_(new T[n]), v_(new T[n])
    {
        for (std::size_t i = 0; i < n_; i++) {
            u_[i] = static_cast<T>(i % 17) / static_cast<T>(16);
            v_[i] = T(0);
        }
    }
    ~Grid()
    {
        delete[] u_;
        delete[] v_;
    }
    Grid(const Grid &) = delete;
    Grid &operator=(const Grid &) = delete;

    // `steps` three-point smoothing sweeps, data kept on the device across
    // them by a structured data region over the two raw buffers.
    void smooth(int steps, T weight)
    {
        T *u = u_;
        T *v = v_;
        const std::size_t n = n_;
#pragma acc data copy(u[0:n]) create(v[0:n])
        {
            for (int s = 0; s < steps; s++) {
#pragma acc parallel loop present(u[0:n], v[0:n])
                for (std::size_t i = 1; i < n - 1; i++)
                    v[i] = u[i] + weight * (u[i - 1] - 2 * u[i] + u[i + 1]);
#pragma acc parallel loop present(u[0:n], v[0:n])
                for (std::size_t i = 1; i < n - 1; i++)
                    u[i] = v[i];
            }
        }
    }

    // Sum with a `kernels` construct and a reduction: implicit copyin of u.
    double total() const
    {
        const T *u = u_;
        const std::size_t n = n_;
        double s = 0.0;
#pragma acc kernels loop reduction(+:s) copyin(u[0:n])
        for (std::size_t i = 0; i < n; i++)
            s += static_cast<double>(u[i]);
        return s;
    }

private:
    std::size_t n_;
    T *u_;
    T *v_;
};

double run_float(std::size_t n, int steps);
double run_double(std::size_t n, int steps);

#endif
