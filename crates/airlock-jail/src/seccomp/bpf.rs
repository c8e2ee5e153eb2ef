//! A tiny classic-BPF assembler with forward labels.
//!
//! Classic BPF conditional jumps carry 8-bit offsets (`jt`/`jf`) and may only jump forward. The
//! assembler lets the filter be written with named targets and checks, when the program is
//! finished, that every jump is forward and fits in 8 bits. Unconditional `JA` jumps carry a
//! 32-bit offset and are used for the long branches of the syscall-number search tree.

use super::SeccompError;

/// Offset of `seccomp_data.nr` (the syscall number).
const OFFSET_NR: u32 = 0;
/// Offset of `seccomp_data.arch` (the AUDIT_ARCH_* of the calling ABI).
const OFFSET_ARCH: u32 = 4;
/// Offset of `seccomp_data.args[0]`; each argument is a 64-bit slot.
const OFFSET_ARGS: u32 = 16;

/// The kernel rejects filters longer than this (`BPF_MAXINSNS`).
pub(super) const MAX_INSNS: usize = 4096;

/// A jump target that is bound to an instruction index later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Label(usize);

/// Where a conditional jump goes when its condition is true or false.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    /// The next instruction (offset 0).
    Next,
    /// A label bound later in the program.
    Label(Label),
}

#[derive(Debug, Clone, Copy)]
enum Insn {
    Stmt {
        code: u16,
        k: u32,
    },
    Jump {
        code: u16,
        k: u32,
        jt: Target,
        jf: Target,
    },
    Always {
        to: Label,
    },
}

/// Builds a classic BPF program for seccomp.
#[derive(Debug, Default)]
pub(super) struct Assembler {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
}

// The BPF opcode constants in libc are u32 but `sock_filter.code` is u16; every opcode fits.
const fn op(bits: u32) -> u16 {
    bits as u16
}

const LD_W_ABS: u16 = op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS);
const ALU_AND_K: u16 = op(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K);
const JEQ_K: u16 = op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K);
const JGE_K: u16 = op(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K);
const JSET_K: u16 = op(libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K);
const RET_K: u16 = op(libc::BPF_RET | libc::BPF_K);
const JA: u16 = op(libc::BPF_JMP | libc::BPF_JA);

impl Assembler {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// A fresh, unbound label.
    pub(super) fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `label` to the next instruction emitted.
    pub(super) fn bind(&mut self, label: Label) {
        if let Some(slot) = self.labels.get_mut(label.0) {
            *slot = Some(self.insns.len());
        }
    }

    fn stmt(&mut self, code: u16, k: u32) {
        self.insns.push(Insn::Stmt { code, k });
    }

    fn jump(&mut self, code: u16, k: u32, jt: Target, jf: Target) {
        self.insns.push(Insn::Jump { code, k, jt, jf });
    }

    /// A = seccomp_data.nr
    pub(super) fn load_nr(&mut self) {
        self.stmt(LD_W_ABS, OFFSET_NR);
    }

    /// A = seccomp_data.arch
    pub(super) fn load_arch(&mut self) {
        self.stmt(LD_W_ABS, OFFSET_ARCH);
    }

    /// A = low 32 bits of seccomp_data.args[index].
    ///
    /// Each argument is a native-endian u64 slot, so the low word sits at the slot's start on
    /// little-endian and 4 bytes in on big-endian. There is deliberately no high-word load: every
    /// argument the filter inspects is truncated to 32 bits by the kernel (see `compile.rs`).
    pub(super) fn load_arg_low(&mut self, index: u32) {
        let slot = OFFSET_ARGS + 8 * index;
        let offset = if cfg!(target_endian = "little") {
            slot
        } else {
            slot + 4
        };
        self.stmt(LD_W_ABS, offset);
    }

    /// A &= k
    pub(super) fn and(&mut self, k: u32) {
        self.stmt(ALU_AND_K, k);
    }

    /// if A == k goto jt else goto jf
    pub(super) fn jeq(&mut self, k: u32, jt: Target, jf: Target) {
        self.jump(JEQ_K, k, jt, jf);
    }

    /// if A >= k (unsigned) goto jt else goto jf
    pub(super) fn jge(&mut self, k: u32, jt: Target, jf: Target) {
        self.jump(JGE_K, k, jt, jf);
    }

    /// if A & k != 0 goto jt else goto jf
    pub(super) fn jset(&mut self, k: u32, jt: Target, jf: Target) {
        self.jump(JSET_K, k, jt, jf);
    }

    /// return `action` (a SECCOMP_RET_* value)
    /// Unconditional forward jump (32-bit offset).
    pub(super) fn ja(&mut self, to: Label) {
        self.insns.push(Insn::Always { to });
    }

    pub(super) fn ret(&mut self, action: u32) {
        self.stmt(RET_K, action);
    }

    /// Resolves labels and returns the program, or an error if a jump does not fit.
    pub(super) fn finish(self) -> Result<Vec<libc::sock_filter>, SeccompError> {
        if self.insns.len() > MAX_INSNS {
            return Err(SeccompError::TooLong {
                len: self.insns.len(),
            });
        }
        let offset = |at: usize, target: Target| -> Result<u8, SeccompError> {
            let to = match target {
                Target::Next => return Ok(0),
                Target::Label(label) => self
                    .labels
                    .get(label.0)
                    .copied()
                    .flatten()
                    .ok_or(SeccompError::UnboundLabel)?,
            };
            // Jumps are relative to the instruction after the jump and may only go forward.
            let distance = to
                .checked_sub(at + 1)
                .ok_or(SeccompError::BackwardJump { at })?;
            u8::try_from(distance).map_err(|_| SeccompError::JumpTooFar { at, distance })
        };
        self.insns
            .iter()
            .enumerate()
            .map(|(at, insn)| match *insn {
                Insn::Stmt { code, k } => Ok(libc::sock_filter {
                    code,
                    jt: 0,
                    jf: 0,
                    k,
                }),
                Insn::Jump { code, k, jt, jf } => Ok(libc::sock_filter {
                    code,
                    jt: offset(at, jt)?,
                    jf: offset(at, jf)?,
                    k,
                }),
                Insn::Always { to } => {
                    let to = self
                        .labels
                        .get(to.0)
                        .copied()
                        .flatten()
                        .ok_or(SeccompError::UnboundLabel)?;
                    let distance = to
                        .checked_sub(at + 1)
                        .ok_or(SeccompError::BackwardJump { at })?;
                    Ok(libc::sock_filter {
                        code: JA,
                        jt: 0,
                        jf: 0,
                        k: distance as u32,
                    })
                }
            })
            .collect()
    }
}
