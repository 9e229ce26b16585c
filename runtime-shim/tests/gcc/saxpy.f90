! A gfortran -fopenacc program: a data region with a parallel loop and a reduction, and an update.
program saxpy
  implicit none
  integer, parameter :: n = 2000
  real(8) :: x(n), y(n), s
  integer :: i, it
  do i = 1, n
    x(i) = i * 0.5d0
    y(i) = 1
  end do
  s = 0
  !$acc data copyin(x) copy(y)
  do it = 1, 5
    !$acc parallel loop present(x, y)
    do i = 1, n
      y(i) = y(i) + 2 * x(i)
    end do
  end do
  !$acc parallel loop present(y) reduction(+:s)
  do i = 1, n
    s = s + y(i)
  end do
  !$acc end data
  print '(a,f0.3,a,f0.3)', 'saxpy: s=', s, ' y(7)=', y(7)
end program saxpy
