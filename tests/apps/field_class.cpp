// A class holding its array in a member that its constructor allocates with new[]; a method
// with the kernel that main's loop calls. The array goes by the member's name, arr[0:n].
#include <cstdio>

class Field {
    int n;
    double *arr;

public:
    explicit Field(int m) : n(m) { arr = new double[n]; for (int i = 0; i < n; i++) arr[i] = i % 7; }
    ~Field() { delete[] arr; }
    Field(const Field &) = delete;
    Field &operator=(const Field &) = delete;
    void relax()
    {
        double *a = arr;
        const int m = n;
#pragma acc parallel loop copy(a[0:m])
        for (int i = 1; i < m - 1; i++)
            a[i] = 0.5 * a[i] + 0.25;
    }
    double sum() const
    {
        double s = 0.0;
        for (int i = 0; i < n; i++)
            s += arr[i];
        return s;
    }
};

int main()
{
    Field f(100000);
    for (int it = 0; it < 10; it++)
        f.relax();
    std::printf("field_class checksum %.6f\n", f.sum());
    return 0;
}
