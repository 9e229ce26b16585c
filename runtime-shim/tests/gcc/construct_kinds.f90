! kernels, serial and parallel constructs in Fortran, which GCC lowers to the same call.
program construct_kinds
  integer, parameter :: n = 100
  real(8) :: a(n), s
  integer :: i
  a = 1
  s = 0
  !$acc kernels copy(a)
  do i = 1, n
    a(i) = a(i) * 2
  end do
  !$acc end kernels
  !$ACC Serial copy(a, s)
  do i = 1, n
    s = s + a(i)
  end do
  !$ACC End Serial
  !$acc parallel loop copy(a)
  do i = 1, n
    a(i) = a(i) + 1
  end do
  print '(2f10.1)', s, a(n)
end program
