! Fortran driver for heat_mod (multi-file): a `!$acc data copy(t) create(tnew)`
! region around the time loop, module procedures with compute constructs
! called inside it, an `!$acc update` every 10 steps. Prints a checksum.
program heat
  use heat_mod
  implicit none
  integer :: step
  real(dp) :: change, total

  call heat_init(200, 200)
  change = 0.0_dp
  !$acc data copy(t) create(tnew)
  do step = 1, 100
    change = heat_step()
    if (mod(step, 10) == 0) call heat_boundary()
  end do
  !$acc end data
  total = sum(t)
  write(*, '(a, f14.9, a, f14.9, a, f16.9)') 'heat change ', change, ' edge ', edge_sum, &
    ' checksum ', total
  call heat_free()
end program heat
