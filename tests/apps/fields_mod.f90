! Module allocatables allocated on one line, a time step in a module procedure that the main
! program's loop calls (each call copies the arrays in and out), and a data region whose END
! DATA is its subroutine's last statement. Prints a checksum.
module fields
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer :: nx, ny
  real(dp), allocatable :: t(:,:), tnew(:,:)
contains
  subroutine init(n)
    integer, intent(in) :: n
    nx = n
    ny = n
    allocate(t(nx, ny), tnew(nx, ny))
    t = 0.0_dp
    t(:, 1) = 1.0_dp
    tnew = 0.0_dp
  end subroutine init

  subroutine step()
    integer :: i, j
    !$acc parallel loop collapse(2) copyin(t) copyout(tnew)
    do j = 2, ny - 1
      do i = 2, nx - 1
        tnew(i, j) = 0.25_dp * (t(i-1, j) + t(i+1, j) + t(i, j-1) + t(i, j+1))
      end do
    end do
    !$acc parallel loop collapse(2) copyin(tnew) copy(t)
    do j = 2, ny - 1
      do i = 2, nx - 1
        t(i, j) = tnew(i, j)
      end do
    end do
  end subroutine step

  subroutine smooth_once()
    integer :: i, j
    !$acc data copy(t) create(tnew)
    !$acc parallel loop collapse(2) present(t, tnew)
    do j = 2, ny - 1
      do i = 2, nx - 1
        tnew(i, j) = t(i, j)
      end do
    end do
    !$acc end data
  end subroutine smooth_once
end module fields

program fields_main
  use fields
  implicit none
  integer :: s
  call init(128)
  do s = 1, 20
    call step()
  end do
  call smooth_once()
  print '(a, f16.9)', 'fields_mod checksum ', sum(t)
end program fields_main
