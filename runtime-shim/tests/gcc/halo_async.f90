! A halo exchange as miniWeather does it, on one rank: a pack kernel, an async update host of the
! send buffers (Fortran allocatables in a module), the host swaps them, an async update device
! and unpack, then a smoothing kernel, all on queue 1. Prints a checksum of the field.
module bufs
  implicit none
  real(8), allocatable :: q(:), sendbuf_l(:), sendbuf_r(:), recvbuf_l(:), recvbuf_r(:)
end module bufs
program halo_async
  use bufs
  implicit none
  integer, parameter :: n = 100000, hs = 2000
  integer :: i, it
  real(8) :: s
  allocate (q(n), sendbuf_l(hs), sendbuf_r(hs), recvbuf_l(hs), recvbuf_r(hs))
  do i = 1, n
    q(i) = mod(i, 7)
  end do
  sendbuf_l = 0; sendbuf_r = 0; recvbuf_l = 0; recvbuf_r = 0
  !$acc data copy(q) create(sendbuf_l, sendbuf_r, recvbuf_l, recvbuf_r)
  do it = 1, 10
    !$acc parallel loop present(q, sendbuf_l, sendbuf_r) async(1)
    do i = 1, hs
      sendbuf_l(i) = q(i + hs)
      sendbuf_r(i) = q(n - 2*hs + i)
    end do
    !$acc update host(sendbuf_l, sendbuf_r) async(1)
    !$acc wait(1)
    recvbuf_l = sendbuf_r
    recvbuf_r = sendbuf_l
    !$acc update device(recvbuf_l, recvbuf_r) async(1)
    !$acc parallel loop present(q, recvbuf_l, recvbuf_r) async(1)
    do i = 1, hs
      q(i) = recvbuf_l(i)
      q(n - hs + i) = recvbuf_r(i)
    end do
    !$acc parallel loop present(q) async(1)
    do i = hs + 1, n - hs
      q(i) = 0.5d0 * q(i) + 0.25d0 * (q(i-1) + q(i+1))
    end do
    !$acc wait(1)
  end do
  !$acc end data
  s = 0
  do i = 1, n
    s = s + q(i) * mod(i, 13)
  end do
  print '(a,f0.6)', 'halo checksum ', s
end program halo_async
