! Constants passed by reference to a routine whose kernels construct uses them: a PARAMETER
! and literals land in read-only memory, and GCC maps a scalar dummy argument that a kernels
! construct uses `force_tofrom` (scalars in kernels are implicitly copy), so the runtime copies
! them back at the construct's end. Writing them back would fault. The copyin of an 8-byte
! dummy argument (`*level`, then the pointer `level` that points to it) in a parallel construct
! maps the data before the pointer.
module shapes
  implicit none
  integer, parameter :: g_rect = 1, g_circ = 2
contains
  subroutine paint(x_min, x_max, geometry, shape, level, field)
    integer :: x_min, x_max, geometry, shape
    real(kind=8) :: level
    real(kind=8), dimension(x_min:x_max) :: field
    real(kind=8) :: edge
    integer :: j
!$acc data copy(field)
!$acc kernels
    edge = level * 2.0d0
!$acc loop independent
    do j = x_min, x_max
      if (geometry .eq. shape .and. j .gt. (x_min + x_max) / 2) field(j) = edge
    end do
!$acc end kernels
!$acc parallel loop copyin(level) present(field)
    do j = x_min, x_min + 1
      field(j) = field(j) + level
    end do
!$acc end data
  end subroutine
end module

program constant_arguments
  use shapes
  implicit none
  real(kind=8) :: field(100)
  field = 0
  call paint(1, 100, g_rect, g_rect, 1.5d0, field)
  call paint(1, 100, g_circ, g_rect, 7.0d0, field)
  print '(a,f10.2)', 'sum', sum(field)
end program
