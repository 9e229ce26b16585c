! A Fortran derived type with allocatable components, put on the device as such codes do: the
! object first, then its components (a GOMP_MAP_STRUCT group of their descriptors, the data,
! and attachments); kernels reach the components through the object; update self/device of a
! component (GCC adds a GOMP_MAP_ALWAYS_POINTER for its descriptor); components released one
! by one, then the object.
module fields
  implicit none
  type field
    integer :: n
    real(8) :: scale
    real(8), allocatable :: u(:), v(:)
  end type
contains
  subroutine field_init(f, n)
    type(field), intent(inout) :: f
    integer, intent(in) :: n
    integer :: i
    f%n = n
    f%scale = 0.5d0
    allocate(f%u(n), f%v(n))
    f%u = [(real(i, 8), i = 1, n)]
    !$acc enter data copyin(f)
    !$acc enter data copyin(f%u) create(f%v)
  end subroutine

  subroutine field_step(f)
    type(field), intent(inout) :: f
    integer :: i
    !$acc parallel loop present(f)
    do i = 1, f%n
      f%v(i) = f%scale * f%u(i) + f%v(i)
    end do
  end subroutine

  subroutine field_free(f)
    type(field), intent(inout) :: f
    !$acc exit data copyout(f%v) delete(f%u)
    !$acc exit data delete(f)
  end subroutine
end module

program derived_type
  use fields
  implicit none
  type(field) :: f
  integer :: k
  call field_init(f, 500)
  !$acc parallel loop present(f)
  do k = 1, f%n
    f%v(k) = 0
  end do
  do k = 1, 3
    call field_step(f)
  end do
  !$acc update self(f%v)
  print '(a, f12.2)', 'after 3 steps: ', sum(f%v)
  f%u = 1
  !$acc update device(f%u)
  call field_step(f)
  call field_free(f)
  print '(a, f12.2)', 'after update device: ', sum(f%v)
end program
