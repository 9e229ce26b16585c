! relax_args: a Fortran module whose routines take their bounds and coefficients as scalar
! dummy arguments and compute in `!$acc kernels` constructs, called every time step inside a
! `!$acc data` region that keeps the arrays on the device (CloverLeaf's shape). Only the
! scalars move per call: in a kernels construct they are implicitly copy, so GCC copies each
! one in and back out at every launch.
!
! Exercises: module procedures with explicit-shape dummy arrays, `!$acc kernels` with
! `!$acc loop independent`, `present(...)` from an enclosing data region, a PARAMETER passed
! by reference (read-only memory on the host).
module relax_kernels
  implicit none
  integer, parameter :: halo = 1
contains
  subroutine smooth(x_min, x_max, y_min, y_max, depth, weight, a, b)
    integer :: x_min, x_max, y_min, y_max, depth
    real(kind=8) :: weight
    real(kind=8), dimension(x_min-depth:x_max+depth, y_min-depth:y_max+depth) :: a, b
    integer :: j, k
!$acc data present(a, b)
!$acc kernels
!$acc loop independent
    do k = y_min, y_max
!$acc loop independent
      do j = x_min, x_max
        b(j, k) = (1.0d0 - weight) * a(j, k) &
                + weight * 0.25d0 * (a(j-1, k) + a(j+1, k) + a(j, k-1) + a(j, k+1))
      end do
    end do
!$acc end kernels
!$acc end data
  end subroutine

  subroutine copy_back(x_min, x_max, y_min, y_max, depth, a, b)
    integer :: x_min, x_max, y_min, y_max, depth
    real(kind=8), dimension(x_min-depth:x_max+depth, y_min-depth:y_max+depth) :: a, b
    integer :: j, k
!$acc data present(a, b)
!$acc kernels
!$acc loop independent
    do k = y_min, y_max
!$acc loop independent
      do j = x_min, x_max
        a(j, k) = b(j, k)
      end do
    end do
!$acc end kernels
!$acc end data
  end subroutine
end module

program relax_args
  use relax_kernels
  implicit none
  integer, parameter :: n = 64, steps = 30
  real(kind=8), allocatable :: a(:, :), b(:, :)
  integer :: step, j, k
  allocate(a(0:n+1, 0:n+1), b(0:n+1, 0:n+1))
  do k = 0, n + 1
    do j = 0, n + 1
      a(j, k) = mod(j * 7 + k * 13, 17) * 1.0d0
    end do
  end do
  b = a
!$acc data copy(a) create(b)
  do step = 1, steps
    call smooth(1, n, 1, n, halo, 0.5d0, a, b)
    call copy_back(1, n, 1, n, halo, a, b)
  end do
!$acc end data
  print '(a,f16.6)', 'relax_args checksum', sum(a)
end program
