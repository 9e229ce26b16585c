! Update host and update device of ALLOCATABLE arrays inside a data region: GCC passes each
! array's descriptor (GOMP_MAP_TO_PSET) and its data pointer (GOMP_MAP_POINTER) beside the
! data; only the data is to be copied, the device's descriptor must keep pointing at the
! device's data. Each kernel's work must survive into the printed sums.
program alloc_update
  implicit none
  integer, parameter :: n = 500
  real(8), allocatable :: a(:), b(:)
  real(8) :: fixed(n), s_host, s_dev
  integer :: i
  allocate (a(n), b(n))
  do i = 1, n
    a(i) = i
    b(i) = 0
    fixed(i) = i
  end do
  !$acc data copy(a, fixed) copyin(b)
  !$acc parallel loop present(a, fixed)
  do i = 1, n
    a(i) = a(i) + 1
    fixed(i) = fixed(i) + 1
  end do
  !$acc update host(a, fixed)
  s_host = sum(a)
  !$acc parallel loop present(a, fixed)
  do i = 1, n
    a(i) = a(i) + 2
    fixed(i) = fixed(i) + 2
  end do
  ! b changed on the host: the device copy gets it, and the kernel reads it there.
  b = 10
  !$acc update device(b)
  !$acc parallel loop present(a, b)
  do i = 1, n
    a(i) = a(i) + b(i)
  end do
  !$acc update host(a)
  s_dev = sum(a)
  !$acc parallel loop present(a)
  do i = 1, n
    a(i) = a(i) * 2
  end do
  !$acc end data
  print '(a,f0.1,a,f0.1,a,f0.1,a,f0.1)', 'after first: ', s_host, ' after update device: ', s_dev, &
    ' end: ', sum(a), ' fixed: ', sum(fixed)
end program alloc_update
