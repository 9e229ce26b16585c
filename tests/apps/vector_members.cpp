// A class keeping its arrays in std::vector members, sized in the constructor's initializer
// list (one line, after a member that allocates nothing), moved by a method's kernel on every
// step: each vector is named by its data (`u.data()[0:n]`), told apart by the column the
// debug information gives for the vector code inlined there. Prints a checksum.
#include <cstdio>
#include <vector>

class Field
{
  public:
    explicit Field(int size) : n(size), u(size, 1.0), v(size, 0.0) {}

    void step()
    {
        const double *pu = u.data();
        double *pv = v.data();
#pragma acc parallel loop copyin(pu[0:n]) copy(pv[0:n])
        for (int i = 1; i < n - 1; i++)
            pv[i] = 0.5 * (pu[i - 1] + pu[i + 1]) + 0.1 * pv[i];
    }

    double sum() const
    {
        double s = 0.0;
        for (double x : v)
            s += x;
        return s;
    }

  private:
    int n;
    std::vector<double> u, v;
};

int main()
{
    Field f(1 << 15);
    for (int step = 0; step < 10; step++)
        f.step();
    std::printf("vector_members checksum %.6f\n", f.sum());
    return 0;
}
