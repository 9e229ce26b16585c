//! What the checker reads from a fault's signal context: the faulting instruction, the stack
//! pointer, whether the access was a write, and what the instruction does to memory (a plain
//! store of how many bytes, or a load); and the trap flag that runs one instruction and stops
//! (x86-64; src/check/step.rs uses it).

/// The registers of a fault.
pub struct Regs {
    pub pc: usize,
    pub sp: usize,
    /// The page-fault error code says the access was a write (x86-64; false elsewhere).
    pub write: bool,
    /// The general registers by their encoding number (rax, rcx, rdx, rbx, rsp, rbp, rsi,
    /// rdi, r8..r15), for the address of a memory operand.
    pub gpr: [usize; 16],
}

/// # Safety
/// `ctx` is the ucontext_t the kernel passed to an SA_SIGINFO handler.
pub unsafe fn regs(ctx: *const libc::c_void) -> Regs {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let uc = ctx as *const libc::ucontext_t;
        // SAFETY: the caller's contract.
        let g = unsafe { &(*uc).uc_mcontext.gregs };
        let order = [
            libc::REG_RAX,
            libc::REG_RCX,
            libc::REG_RDX,
            libc::REG_RBX,
            libc::REG_RSP,
            libc::REG_RBP,
            libc::REG_RSI,
            libc::REG_RDI,
            libc::REG_R8,
            libc::REG_R9,
            libc::REG_R10,
            libc::REG_R11,
            libc::REG_R12,
            libc::REG_R13,
            libc::REG_R14,
            libc::REG_R15,
        ];
        let mut gpr = [0usize; 16];
        for (v, r) in gpr.iter_mut().zip(order) {
            *v = g[r as usize] as usize;
        }
        Regs {
            pc: g[libc::REG_RIP as usize] as usize,
            sp: g[libc::REG_RSP as usize] as usize,
            // Page-fault error code bit 1: the access was a write.
            write: g[libc::REG_ERR as usize] & 2 != 0,
            gpr,
        }
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        let uc = ctx as *const libc::ucontext_t;
        // SAFETY: as above.
        let m = unsafe { &(*uc).uc_mcontext };
        // ESR's WnR bit is in the fault's ESR record, not kept here: reads and writes are told
        // apart on x86-64 only.
        Regs {
            pc: m.pc as usize,
            sp: m.sp as usize,
            write: false,
            gpr: [0; 16],
        }
    }
}

/// Whether the trap flag can be set in a signal context here (x86-64).
pub const CAN_STEP: bool = cfg!(all(target_os = "linux", target_arch = "x86_64"));

/// Sets or clears the trap flag in the interrupted context: with it set, the thread runs one
/// instruction when the handler returns and then takes SIGTRAP.
///
/// # Safety
/// As for [`regs`]; the context is the one the handler returns to.
pub unsafe fn set_trap_flag(ctx: *mut libc::c_void, on: bool) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        const TF: i64 = 0x100;
        let uc = ctx as *mut libc::ucontext_t;
        // SAFETY: the caller's contract.
        let g = unsafe { &mut (*uc).uc_mcontext.gregs };
        let f = &mut g[libc::REG_EFL as usize];
        *f = if on { *f | TF } else { *f & !TF };
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    let _ = (ctx, on);
}

/// What an instruction does to the memory operand that faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Writes these many bytes from the address and reads none of them (a move to memory).
    Store(usize, usize),
    /// Reads these many bytes from the address.
    Load(usize, usize),
    /// Anything else: a read-modify-write, a masked or scattered store, an instruction this
    /// decoder does not know. Taken as a read of the operand.
    Other,
}

/// What the instruction at `r.pc` does to memory where it faulted at `addr` (x86-64's moves,
/// which are what compiled loops store with; every other instruction is [`Effect::Other`]).
///
/// # Safety
/// `r.pc` is the address of an instruction that just faulted, so its bytes are readable; the
/// decoder reads no byte past the instruction's own.
pub unsafe fn effect(addr: usize, r: &Regs) -> Effect {
    if !CAN_STEP {
        return Effect::Other;
    }
    let pc = r.pc;
    // SAFETY: the caller's contract; the decoder reads forward one byte at a time and stops at
    // the end of the instruction.
    let byte = |i: usize| unsafe { ((pc + i) as *const u8).read_volatile() };
    decode(&byte, addr, r).unwrap_or(Effect::Other)
}

/// The prefixes and fields the decoder has read so far.
#[derive(Default)]
struct Insn {
    at: usize,
    opsize16: bool,
    rep: u8,
    /// REX (or VEX/EVEX's) W, X and B.
    w: bool,
    x: bool,
    b: bool,
    /// EVEX: a displacement of one byte counts in units of the operand's size.
    disp8_scaled: bool,
}

/// The decoder, over a function that reads the instruction's bytes. None for what it does not
/// know.
pub fn decode(byte: &dyn Fn(usize) -> u8, addr: usize, r: &Regs) -> Option<Effect> {
    let mut d = Insn::default();
    loop {
        match byte(d.at) {
            0x66 => d.opsize16 = true,
            0xf2 | 0xf3 => d.rep = byte(d.at),
            // lock: a read-modify-write; fs/gs: an address the registers do not give.
            0xf0 | 0x64 | 0x65 => return None,
            0x2e | 0x36 | 0x3e | 0x26 => {}
            0x67 => return None,
            _ => break,
        }
        d.at += 1;
        if d.at > 14 {
            return None;
        }
    }
    let b = byte(d.at);
    if (0x40..=0x4f).contains(&b) {
        (d.w, d.x, d.b) = (b & 8 != 0, b & 2 != 0, b & 1 != 0);
        d.at += 1;
    }
    let op = byte(d.at);
    d.at += 1;
    let int = |w: bool, opsize16: bool| {
        if w {
            8
        } else if opsize16 {
            2
        } else {
            4
        }
    };
    // The simple prefix (66, F3, F2) of the SSE forms, as VEX's pp field numbers it.
    let pp = match (d.rep, d.opsize16) {
        (0xf3, _) => 2,
        (0xf2, _) => 3,
        (_, true) => 1,
        _ => 0,
    };
    let (store, n, imm) = match op {
        0x88 => (true, 1, 0),
        0x89 => (true, int(d.w, d.opsize16), 0),
        0x8a => (false, 1, 0),
        0x8b => (false, int(d.w, d.opsize16), 0),
        // mov r/m, imm: only the /0 form is a move.
        0xc6 | 0xc7 if (byte(d.at) >> 3) & 7 == 0 => {
            if op == 0xc6 {
                (true, 1, 1)
            } else {
                let n = int(d.w, d.opsize16);
                (true, n, n.min(4))
            }
        }
        0xaa | 0xab | 0xa4 | 0xa5 => {
            // stos and movs: one element at rdi (from rsi) per step; a rep form faults (and
            // is stepped) element by element.
            let n = if op & 1 == 0 { 1 } else { int(d.w, d.opsize16) };
            let (rdi, rsi) = (r.gpr[7], r.gpr[6]);
            return Some(if addr >= rdi && addr < rdi + n {
                Effect::Store(rdi, n)
            } else {
                Effect::Load(rsi, n)
            });
        }
        0x0f => {
            let op2 = byte(d.at);
            d.at += 1;
            let (store, n) = sse(op2, pp, d.w, 16)?;
            (store, n, 0)
        }
        0xc5 => {
            // Two-byte VEX: ~R vvvv L pp, map 0F.
            let p = byte(d.at);
            let len = if p & 4 != 0 { 32 } else { 16 };
            let op2 = byte(d.at + 1);
            d.at += 2;
            let (store, n) = sse(op2, p & 3, false, len)?;
            (store, n, 0)
        }
        0xc4 => {
            let (p0, p1) = (byte(d.at), byte(d.at + 1));
            if p0 & 0x1f != 1 {
                return None; // maps 0F38 and 0F3A: masked moves, gathers, ...
            }
            (d.x, d.b, d.w) = (p0 & 0x40 == 0, p0 & 0x20 == 0, p1 & 0x80 != 0);
            let len = if p1 & 4 != 0 { 32 } else { 16 };
            let op2 = byte(d.at + 2);
            d.at += 3;
            let (store, n) = sse(op2, p1 & 3, d.w, len)?;
            (store, n, 0)
        }
        0x62 => {
            let (p0, p1, p2) = (byte(d.at), byte(d.at + 1), byte(d.at + 2));
            if p0 & 7 != 1 || p2 & 7 != 0 || p2 & 0x10 != 0 {
                return None; // another map, a masked move (some elements), a broadcast
            }
            (d.x, d.b, d.w) = (p0 & 0x40 == 0, p0 & 0x20 == 0, p1 & 0x80 != 0);
            let len = match (p2 >> 5) & 3 {
                0 => 16,
                1 => 32,
                2 => 64,
                _ => return None,
            };
            let op2 = byte(d.at + 3);
            d.at += 4;
            d.disp8_scaled = true;
            let (store, n) = sse(op2, p1 & 3, d.w, len)?;
            (store, n, 0)
        }
        _ => return None,
    };
    let ea = operand(byte, &mut d, n, imm, r)?;
    Some(if store {
        Effect::Store(ea, n)
    } else {
        Effect::Load(ea, n)
    })
}

/// The address of the memory operand whose ModRM byte is at the cursor, for an operand of `n`
/// bytes and an instruction with `imm` bytes of immediate after it.
fn operand(
    byte: &dyn Fn(usize) -> u8,
    d: &mut Insn,
    n: usize,
    imm: usize,
    r: &Regs,
) -> Option<usize> {
    let modrm = byte(d.at);
    d.at += 1;
    let (md, rm) = (modrm >> 6, modrm & 7);
    if md == 3 {
        return None;
    }
    let reg = |i: u8| r.gpr[i as usize];
    let mut base: Option<usize> = None;
    let mut rip_relative = false;
    let mut ea: usize = 0;
    if rm == 4 {
        let sib = byte(d.at);
        d.at += 1;
        let (scale, index, b) = (sib >> 6, (sib >> 3) & 7 | u8::from(d.x) << 3, sib & 7);
        if index != 4 {
            ea = reg(index).wrapping_shl(u32::from(scale));
        }
        if !(b == 5 && md == 0) {
            base = Some(reg(b | u8::from(d.b) << 3));
        }
    } else if rm == 5 && md == 0 {
        rip_relative = true;
    } else {
        base = Some(reg(rm | u8::from(d.b) << 3));
    }
    let disp: isize = match (md, rm, base) {
        (1, _, _) => {
            let v = byte(d.at) as i8 as isize;
            d.at += 1;
            if d.disp8_scaled {
                v * n as isize
            } else {
                v
            }
        }
        (2, _, _) | (0, 5, _) | (0, 4, None) => {
            let v =
                i32::from_le_bytes([byte(d.at), byte(d.at + 1), byte(d.at + 2), byte(d.at + 3)]);
            d.at += 4;
            v as isize
        }
        _ => 0,
    };
    d.at += imm;
    if rip_relative {
        return Some((r.pc + d.at).wrapping_add_signed(disp));
    }
    Some(ea.wrapping_add(base.unwrap_or(0)).wrapping_add_signed(disp))
}

/// The moves of map 0F (legacy SSE, VEX and EVEX alike): whether a store, and how many bytes.
/// `pp` the 66/F3/F2 prefix (1/2/3), `w` REX.W or VEX.W, `len` the packed forms' length.
fn sse(op: u8, pp: u8, w: bool, len: usize) -> Option<(bool, usize)> {
    let scalar = match pp {
        2 => 4,
        3 => 8,
        _ => len,
    };
    let gpr = if w { 8 } else { 4 };
    Some(match (op, pp) {
        (0x10, _) => (false, scalar),
        (0x11, _) => (true, scalar),
        (0x12 | 0x16, 0 | 1) => (false, 8),
        (0x13 | 0x17, 0 | 1) => (true, 8),
        (0x28, 0 | 1) => (false, len),
        (0x29 | 0x2b, 0 | 1) => (true, len),
        (0x6e, 0 | 1) => (false, gpr),
        (0x6f, 1..=3) => (false, len),
        (0x6f, 0) => (false, 8),
        (0x7e, 2) => (false, 8),
        (0x7e, 0 | 1) => (true, gpr),
        (0x7f, 1..=3) => (true, len),
        (0x7f, 0) => (true, 8),
        (0xd6, 1) => (true, 8),
        (0xe7, 1) => (true, len),
        (0xe7, 0) => (true, 8),
        (0xc3, 0) => (true, gpr),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rax = 0x1000, rcx = 0x10, rdx = 0x2000, rdi = 0x3000, rsi = 0x4000, pc 0x5000.
    fn of(bytes: &[u8]) -> Effect {
        let mut gpr = [0usize; 16];
        (gpr[0], gpr[1], gpr[2], gpr[7], gpr[6]) = (0x1000, 0x10, 0x2000, 0x3000, 0x4000);
        let r = Regs {
            pc: 0x5000,
            sp: 0,
            write: false,
            gpr,
        };
        decode(&|i| bytes[i], 0x3000, &r).unwrap_or(Effect::Other)
    }

    #[test]
    fn the_moves_compiled_loops_store_with_are_stores_of_their_width_and_address() {
        // movsd [rdx+rcx*8], xmm0
        assert_eq!(
            of(&[0xf2, 0x0f, 0x11, 0x04, 0xca]),
            Effect::Store(0x2080, 8)
        );
        // movupd [rdx+rax], xmm0
        assert_eq!(
            of(&[0x66, 0x0f, 0x11, 0x04, 0x02]),
            Effect::Store(0x3000, 16)
        );
        // movaps [rax+0x10], xmm0
        assert_eq!(of(&[0x0f, 0x29, 0x40, 0x10]), Effect::Store(0x1010, 16));
        // movss [rax-8], xmm0
        assert_eq!(of(&[0xf3, 0x0f, 0x11, 0x40, 0xf8]), Effect::Store(0xff8, 4));
        // mov [rdx+rax*4], eax
        assert_eq!(of(&[0x89, 0x04, 0x82]), Effect::Store(0x6000, 4));
        // mov qword [rax+0x100], 0
        assert_eq!(
            of(&[0x48, 0xc7, 0x80, 0, 1, 0, 0, 0, 0, 0, 0]),
            Effect::Store(0x1100, 8)
        );
        // mov qword [rip+0x10], 0: the next instruction is 11 bytes on
        assert_eq!(
            of(&[0x48, 0xc7, 0x05, 0x10, 0, 0, 0, 0, 0, 0, 0]),
            Effect::Store(0x501b, 8)
        );
        // vmovupd [rax], ymm0
        assert_eq!(of(&[0xc5, 0xfd, 0x11, 0x00]), Effect::Store(0x1000, 32));
        // vmovsd [r8+rax], xmm0 (three-byte VEX, B set)
        assert_eq!(
            of(&[0xc4, 0xc1, 0x7b, 0x11, 0x04, 0x00]),
            Effect::Store(0x1000, 8)
        );
        // vmovupd [rax+0x40], zmm0: EVEX scales the one-byte displacement
        assert_eq!(
            of(&[0x62, 0xf1, 0xfd, 0x48, 0x11, 0x40, 0x01]),
            Effect::Store(0x1040, 64)
        );
        // rep stosq, rep movsb: at rdi
        assert_eq!(of(&[0xf3, 0x48, 0xab]), Effect::Store(0x3000, 8));
        assert_eq!(of(&[0xf3, 0xa4]), Effect::Store(0x3000, 1));
    }

    #[test]
    fn reads_and_read_modify_writes_are_not_stores() {
        // movsd xmm0, [rdx+rcx*8]
        assert_eq!(of(&[0xf2, 0x0f, 0x10, 0x04, 0xca]), Effect::Load(0x2080, 8));
        assert_eq!(of(&[0xf2, 0x0f, 0x58, 0x04, 0xc1]), Effect::Other); // addsd xmm0, [..]
        assert_eq!(of(&[0x01, 0x04, 0x82]), Effect::Other); // add [rdx+rax*4], eax
        assert_eq!(of(&[0xf0, 0x48, 0x0f, 0xc1, 0x02]), Effect::Other); // lock xadd
        assert_eq!(of(&[0xc7, 0x48, 0x00, 0, 0, 0, 0]), Effect::Other); // /1: not a move
        assert_eq!(
            of(&[0x62, 0xf1, 0xfd, 0x49, 0x11, 0x04, 0x02]),
            Effect::Other
        ); // masked
        assert_eq!(of(&[0xc4, 0xe2, 0x7d, 0x2f, 0x04, 0x02]), Effect::Other); // vmaskmovpd
    }
}
