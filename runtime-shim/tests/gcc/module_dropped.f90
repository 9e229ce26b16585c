! A missing copyout on a Fortran module array: field is only copied in, so on a GPU the host
! never sees the kernel's results (libgomp's host fallback shares memory and hides it). The
! shim's warning names the array, found through its descriptor; the other allocatable, copied
! back, is not warned about. Prints the host's sums.
module grid
  implicit none
  real(8), allocatable :: field(:), out(:)
end module grid
program module_dropped
  use grid
  implicit none
  integer, parameter :: n = 1000
  integer :: i
  allocate (field(n), out(n))
  field = 1
  out = 0
  !$acc parallel loop copyin(field) copy(out)
  do i = 1, n
    field(i) = field(i) + 1
    out(i) = field(i)
  end do
  print '(a,f0.1,a,f0.1)', 'field: ', sum(field), ' out: ', sum(out)
end program module_dropped
