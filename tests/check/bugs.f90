! The Fortran side of the checker's bug suite (see bugs.c): one seeded bug per run, named by
! the first argument, and correct runs ("ok_*"); the line of each bug is marked BUG: with its
! case. The arrays are module variables, named in the program's symbol table.
module fields
  implicit none
  integer, parameter :: n = 8192
  real(8) :: x(n), y(n)
end module fields

program bugs
  use fields
  implicit none
  character(len=32) :: which
  integer :: i
  real(8) :: s

  which = 'ok_region'
  if (command_argument_count() > 0) call get_command_argument(1, which)
  do i = 1, n
    x(i) = i
    y(i) = 0
  end do
  s = 0
  select case (trim(which))
  case ('stale_host_read')
    !$acc data copy(x)
    !$acc parallel loop present(x)
    do i = 1, n
      x(i) = x(i) + 1
    end do
    s = x(n)  ! BUG:stale_host_read
    !$acc end data
  case ('stale_device_read')
    !$acc data copyin(x) copyout(y)
    x(n) = -1  ! BUG:stale_device_read
    !$acc parallel loop present(x, y)
    do i = 1, n
      y(i) = x(i)
    end do
    !$acc end data
    s = y(n)
  case ('results_dropped')
    !$acc parallel loop copyin(x)  ! BUG:results_dropped
    do i = 1, n
      x(i) = 2 * x(i)
    end do
    s = x(n)
  case ('leak_at_exit')
    !$acc enter data copyin(y)  ! BUG:leak_at_exit
    !$acc parallel loop present(y) reduction(+:s)
    do i = 1, n
      s = s + y(i)
    end do
  case ('redundant_transfer')
    !$acc parallel loop copy(x) copyout(y)  ! BUG:redundant_transfer
    do i = 1, n
      y(i) = x(i) * 3
    end do
    s = y(n)
  case ('unused_transfer')
    !$acc parallel loop copyin(x) copyout(y)  ! BUG:unused_transfer
    do i = 1, n
      y(i) = x(i)
    end do
    !$acc parallel loop copy(y)
    do i = 1, n
      y(i) = y(i) + 1
    end do
    s = y(n)
  case ('unused_upload')
    !$acc parallel loop copyin(x) copy(y)  ! BUG:unused_upload
    do i = 1, n
      y(i) = 2 * x(i)
    end do
    s = y(n)
  case ('ok_region')
    !$acc data copy(x) create(y)
    do i = 1, 3
      call step()
    end do
    !$acc end data
    s = x(n)
  case ('ok_updates')
    !$acc data copy(x)
    !$acc parallel loop present(x)
    do i = 1, n
      x(i) = x(i) * 2
    end do
    !$acc update self(x)
    s = x(1)
    x(1) = 0
    !$acc update device(x)
    !$acc parallel loop present(x)
    do i = 1, n
      x(i) = x(i) + 1
    end do
    !$acc end data
    s = s + x(1)
  case ('ok_async_local')
    call async_local(s)
  case default
    print *, 'unknown case ', trim(which)
    stop 2
  end select
  print '(a, 1x, f0.1)', trim(which), s
contains
  ! Local arrays (on the stack, which no guard watches) that kernels on ten async queues change
  ! at once, a column each: the device copy changes under the other queues' kernels as one
  ! starts, which is no host change.
  subroutine async_local(total)
    real(8), intent(out) :: total
    integer, parameter :: m = 1000
    real(8) :: a(m, 10), b(m, 10), c(m, 10)
    integer :: j, k
    a = 1
    b = 2
    c = 0
    !$acc data copyin(a, b) copy(c)
    do k = 1, 10
      !$acc serial loop async(k)
      do j = 1, m
        c(j, k) = a(j, k) + b(j, k)
      end do
      !$acc serial loop async(k)
      do j = 1, m
        c(j, k) = c(j, k) * 2
      end do
    end do
    !$acc wait
    !$acc end data
    total = sum(c)
  end subroutine async_local

  subroutine step()
    integer :: j
    !$acc parallel loop present(x, y)
    do j = 1, n
      y(j) = x(j) + 1
    end do
    !$acc parallel loop present(x, y)
    do j = 1, n
      x(j) = y(j) * 0.5d0
    end do
  end subroutine step
end program bugs
