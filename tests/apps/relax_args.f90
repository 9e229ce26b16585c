! relax_args: a Fortran module whose routines take their bounds and coefficients as scalar
! dummy arguments and compute in `!$acc kernels` constructs, called every time step inside a
! `!$acc data` region that keeps the arrays on the device (CloverLeaf's shape). Only the
! scalars move per call: in a kernels construct they are implicitly copy, so GCC copies each
! one in and back out at every launch.
!
! Exercises: module procedures with explicit-shape dummy arrays, `!$acc kernels` with
! `!$acc loop independent`, `present(...)` from an enclosing data region.
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
  ! Variables, not constants: a kernels construct copies its scalar arguments back, and
  ! libgomp on a GPU then writes into a constant's read-only cell (SIGSEGV in cuMemcpyDtoH),
  ! or stops when one constant is given twice ("already mapped"), as on an H100 with GCC 12.
  integer :: x_lo = 1, y_lo = 1, x_hi = n, y_hi = n, depth = halo
  real(kind=8) :: weight = 0.5d0
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
    call smooth(x_lo, x_hi, y_lo, y_hi, depth, weight, a, b)
    call copy_back(x_lo, x_hi, y_lo, y_hi, depth, a, b)
  end do
!$acc end data
  print '(a,f16.6)', 'relax_args checksum', sum(a)
end program
