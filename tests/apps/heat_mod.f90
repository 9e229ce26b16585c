! Fortran module with allocatable module arrays: heat_init allocates them,
! heat_step runs `!$acc parallel loop collapse(2)` and a `reduction(+:)` on
! arrays that the caller keeps on the device with `!$acc data`, and
! heat_boundary refreshes the host copy of the edges with `!$acc update`.
module heat_mod
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer :: nx, ny
  real(dp), allocatable :: t(:,:), tnew(:,:)
  real(dp) :: edge_sum = 0.0_dp
contains
  subroutine heat_init(n, m)
    integer, intent(in) :: n, m
    integer :: i, j
    nx = n
    ny = m
    allocate(t(nx, ny), tnew(nx, ny))
    do j = 1, ny
      do i = 1, nx
        t(i, j) = 0.0_dp
      end do
    end do
    do i = 1, nx
      t(i, 1) = 1.0_dp
    end do
    tnew = t
  end subroutine heat_init

  ! One Jacobi sweep on the device; returns the sum of changes.
  function heat_step() result(change)
    real(dp) :: change
    integer :: i, j
    change = 0.0_dp
    !$acc parallel loop collapse(2) present(t, tnew) reduction(+:change)
    do j = 2, ny - 1
      do i = 2, nx - 1
        tnew(i, j) = 0.25_dp * (t(i-1, j) + t(i+1, j) + t(i, j-1) + t(i, j+1))
        change = change + abs(tnew(i, j) - t(i, j))
      end do
    end do
    !$acc parallel loop collapse(2) present(t, tnew)
    do j = 2, ny - 1
      do i = 2, nx - 1
        t(i, j) = tnew(i, j)
      end do
    end do
  end function heat_step

  ! Bring the column next to the hot edge back to the host (contiguous
  ! section), add it up there, re-impose the hot edge column and push it back.
  subroutine heat_boundary()
    integer :: i
    !$acc update host(t(1:nx, 2))
    do i = 1, nx
      edge_sum = edge_sum + t(i, 2)
      t(i, 1) = 1.0_dp
    end do
    !$acc update device(t(1:nx, 1))
  end subroutine heat_boundary

  subroutine heat_free()
    deallocate(t, tnew)
  end subroutine heat_free
end module heat_mod
