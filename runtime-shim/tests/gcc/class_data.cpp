// The C++ class pattern of the OpenACC best-practices guide: the constructor puts the object
// and its array on the device (enter data copyin(this[0:1]) create(arr[0:len])), member
// functions compute on the device copy and move it with update self/device (GCC adds a
// GOMP_MAP_ALWAYS_POINTER for this->arr), the copy constructor copies device to device, and
// the destructor deletes the array, then the object.
#include <cstdio>

template <class T> class Data
{
  int len;
  T *arr;

public:
  explicit Data (int n) : len (n), arr (new T[n])
  {
#pragma acc enter data copyin(this[0:1]) create(arr[0:len])
  }
  Data (const Data<T> &d) : len (d.len), arr (new T[d.len])
  {
#pragma acc enter data copyin(this[0:1]) create(arr[0:len])
#pragma acc parallel loop present(arr[0:len], d)
    for (int i = 0; i < len; i++)
      arr[i] = d.arr[i];
  }
  ~Data ()
  {
#pragma acc exit data delete(arr[0:len], this[0:1])
    delete[] arr;
  }
  void fill (T v)
  {
#pragma acc parallel loop present(arr[0:len])
    for (int i = 0; i < len; i++)
      arr[i] = v * i;
  }
  void scale (T f)
  {
#pragma acc parallel loop present(arr[0:len])
    for (int i = 0; i < len; i++)
      arr[i] *= f;
  }
  void update_host ()
  {
#pragma acc update self(arr[0:len])
  }
  void update_device ()
  {
#pragma acc update device(arr[0:len])
  }
  T &operator[] (int i) { return arr[i]; }
  T sum () const
  {
    T s = 0;
    for (int i = 0; i < len; i++)
      s += arr[i];
    return s;
  }
};

int main ()
{
  const int n = 1000;
  Data<double> a (n);
  a.fill (0.5);
  Data<double> b (a);
  b.scale (3.0);
  a.update_host ();
  b.update_host ();
  std::printf ("a %.1f b %.1f\n", a.sum (), b.sum ());
  for (int i = 0; i < n; i++)
    a[i] = 1.0;
  a.update_device ();
  a.scale (2.0);
  a.update_host ();
  std::printf ("a after update device %.1f\n", a.sum ());
  return 0;
}
