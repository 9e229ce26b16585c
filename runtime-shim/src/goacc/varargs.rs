//! Reading the arguments of GCC's variadic GOACC_* entry points without C varargs support in
//! Rust: a naked trampoline (src/goacc/entry.rs) stores the six integer argument registers next
//! to each other and hands their address and the address of the caller's stack arguments to a
//! Rust function, which reads the arguments in order as `va_arg` would. Every argument of these
//! entry points is an integer or a pointer (x86-64 System V: the first six in rdi, rsi, rdx,
//! rcx, r8, r9, the rest in 8-byte stack slots), so no vector register is ever read.

/// The arguments of one variadic call, read in order.
pub struct VaArgs {
    regs: *const u64,
    stack: *const u64,
    next: usize,
}

impl VaArgs {
    /// # Safety
    /// `regs` points at the six saved argument registers and `stack` at the caller's first
    /// stack argument, as the trampoline passes them.
    pub unsafe fn new(regs: *const u64, stack: *const u64) -> VaArgs {
        VaArgs {
            regs,
            stack,
            next: 0,
        }
    }

    /// The next argument's 8 bytes (a pointer or size_t).
    ///
    /// # Safety
    /// The caller passed at least this many arguments.
    pub unsafe fn word(&mut self) -> u64 {
        let i = self.next;
        self.next += 1;
        // SAFETY: the caller's contract: argument i exists.
        unsafe {
            if i < 6 {
                *self.regs.add(i)
            } else {
                *self.stack.add(i - 6)
            }
        }
    }

    /// The next argument as a C `int` (its upper 32 bits are undefined in the register or slot).
    ///
    /// # Safety
    /// As [`VaArgs::word`].
    pub unsafe fn int(&mut self) -> i32 {
        // SAFETY: the caller's contract.
        unsafe { self.word() as u32 as i32 }
    }
}

/// Launch dimensions, async queue and wait list of a GOACC_parallel_keyed call.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct LaunchTags {
    /// num_gangs, num_workers, vector_length given at run time (0: not given).
    pub dims: [u32; 3],
    pub async_: Option<i32>,
    pub waits: Vec<i32>,
}

const LAUNCH_DIM: u32 = 1;
const LAUNCH_ASYNC: u32 = 2;
const LAUNCH_WAIT: u32 = 3;
const LAUNCH_OP_MAX: u32 = 0xffff;

/// Reads GCC's launch tag list (gomp-constants.h: code << 28 | device << 16 | op, ended by 0).
///
/// # Safety
/// `va` is at the first tag of a GOACC_parallel_keyed call.
pub unsafe fn launch_tags(va: &mut VaArgs) -> Result<LaunchTags, String> {
    // SAFETY: the caller's contract: the tags are there up to the terminating 0.
    unsafe { read_tags(va) }
}

unsafe fn read_tags(va: &mut VaArgs) -> Result<LaunchTags, String> {
    let mut t = LaunchTags::default();
    loop {
        // SAFETY: the caller's contract (`launch_tags`): the tags follow, up to the terminating 0.
        let tag = unsafe { va.int() } as u32;
        if tag == 0 {
            return Ok(t);
        }
        let (code, device, op) = ((tag >> 28) & 0xf, (tag >> 16) & 0xfff, tag & 0xffff);
        if device != 0 {
            return Err(format!(
                "launch arguments for device_type {device} (device_type clauses are not supported)"
            ));
        }
        match code {
            LAUNCH_DIM => {
                for (d, dim) in t.dims.iter_mut().enumerate() {
                    if op & (1 << d) != 0 {
                        // SAFETY: a LAUNCH_DIM tag is followed by one int per dimension bit set.
                        *dim = unsafe { va.int() }.max(0) as u32;
                    }
                }
            }
            LAUNCH_ASYNC => {
                t.async_ = Some(if op == LAUNCH_OP_MAX {
                    // SAFETY: an async tag with LAUNCH_OP_MAX is followed by the queue as an int.
                    unsafe { va.int() }
                } else {
                    op as i32
                })
            }
            LAUNCH_WAIT => {
                for _ in 0..op {
                    // SAFETY: a wait tag with count `op` is followed by `op` ints.
                    t.waits.push(unsafe { va.int() });
                }
            }
            other => return Err(format!("launch tag code {other} (tag {tag:#x})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(words: &[u64]) -> Result<LaunchTags, String> {
        // Six registers of which the first six words are the call's fixed arguments.
        let regs = [0u64; 6];
        // SAFETY: `regs` and `words` outlive `va`, and the test reads no more words than they hold.
        let mut va = unsafe { VaArgs::new(regs.as_ptr(), words.as_ptr()) };
        for _ in 0..6 {
            // SAFETY: the six fixed words are in `regs`.
            unsafe { va.word() };
        }
        // SAFETY: `va` is at the first tag; `words` ends with the terminating 0 tag.
        unsafe { launch_tags(&mut va) }
    }

    #[test]
    fn reads_async_wait_and_dims_as_gcc_12_packs_them() {
        // async(1) wait(2) as GCC 12 emits them: 0x20000001, 0x30000001, 2, 0.
        let t = tags(&[0x2000_0001, 0x3000_0001, 2, 0]).unwrap();
        assert_eq!(
            t,
            LaunchTags {
                dims: [0; 3],
                async_: Some(1),
                waits: vec![2]
            }
        );
        // async without a value: op 0xffff, the value follows; num_gangs and vector_length.
        let t = tags(&[0x2000_ffff, (-1i32) as u32 as u64, 0x1000_0005, 64, 32, 0]).unwrap();
        assert_eq!(
            t,
            LaunchTags {
                dims: [64, 0, 32],
                async_: Some(-1),
                waits: vec![]
            }
        );
        assert!(tags(&[0x1001_0001, 4, 0])
            .unwrap_err()
            .contains("device_type"));
    }
}
