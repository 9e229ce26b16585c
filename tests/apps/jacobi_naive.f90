! Fortran Jacobi before its data region: a `do while` convergence loop with a
! `!$acc parallel loop collapse(2) reduction(max:)` and a copy-back
! `!$acc kernels` inside, allocatable arrays moved in and out on every
! iteration. The Fortran twin of laplace_naive.c: advice for it must be
! `!$acc data` ... `!$acc end data` around the do while loop (lines 24-41).
program jacobi_naive
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer, parameter :: n = 128, m = 128, iter_max = 40
  real(dp), allocatable :: a(:,:), anew(:,:)
  real(dp) :: err
  integer :: i, j, iter

  allocate(a(n, m), anew(n, m))
  a = 0.0_dp
  do j = 1, m
    a(1, j) = sin(3.14159265358979_dp * real(j - 1, dp) / real(m - 1, dp))
  end do
  anew = a

  err = 1.0_dp
  iter = 0
  ! The convergence loop: every construct inside copies a and anew both ways.
  do while (err > 1.0e-6_dp .and. iter < iter_max)
    err = 0.0_dp
    !$acc parallel loop collapse(2) reduction(max:err)
    do j = 2, m - 1
      do i = 2, n - 1
        anew(i, j) = 0.25_dp * (a(i+1, j) + a(i-1, j) + a(i, j-1) + a(i, j+1))
        err = max(err, abs(anew(i, j) - a(i, j)))
      end do
    end do
    !$acc kernels
    do j = 2, m - 1
      do i = 2, n - 1
        a(i, j) = anew(i, j)
      end do
    end do
    !$acc end kernels
    iter = iter + 1
  end do

  write(*, '(a, i4, a, f14.9, a, f16.9)') 'jacobi iterations ', iter, ' error ', err, &
    ' checksum ', sum(a)
  deallocate(a, anew)
end program jacobi_naive
