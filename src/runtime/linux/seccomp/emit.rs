//! The seccomp section's rules as one classic-BPF program.
//!
//! The kernel converts and JIT-compiles a filter at every attach, and
//! then runs it once per syscall number to find the numbers it always
//! allows: attaching costs per instruction, in every run, on the way to
//! the command. `seccompiler` writes one filter per action, each a linear
//! chain over the syscall numbers that reloads and compares the number
//! again per rule and tests every argument with two or three
//! instructions (576 for the typical policy's section, chained). This
//! writes the same decisions once: a binary search over the listed
//! numbers, each one's block of tests in its leaf (348 with the lease
//! rule; 324 for the default policy's). The tests check every decision
//! against `seccompiler`'s filters installed one after another.
//!
//! The decision for a call on this architecture: the programs in order,
//! the first rule that holds gives its program's action, none gives
//! "allow" (as the filters installed newest first would: every action
//! here is an errno, or `listen`'s notification, which ranks below
//! them, in the last program). A foreign architecture is killed, and on
//! x86_64 an x32 number (bit 30) is refused.

use std::collections::{BTreeMap, BTreeSet};

/// A classic-BPF instruction (`struct sock_filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

pub type Filter = Vec<Insn>;

impl From<Insn> for libc::sock_filter {
    fn from(i: Insn) -> libc::sock_filter {
        libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        }
    }
}

pub const LD_W_ABS: u16 = 0x20;
const AND_K: u16 = 0x54;
pub const JA: u16 = 0x05;
pub const JEQ_K: u16 = 0x15;
pub const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
pub const RET_K: u16 = 0x06;
/// The kernel's `__X32_SYSCALL_BIT`: set in the number of an x32 syscall.
pub const X32_BIT: u32 = 0x4000_0000;
/// The kernel takes at most this many instructions in one filter.
const MAX_LEN: usize = 4096;
/// Leaves of the search tree hold up to this many numbers.
const LEAF: usize = 4;

pub fn ins(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
    Insn { code, jt, jf, k }
}

pub fn ret(action: u32) -> Insn {
    ins(RET_K, 0, 0, action)
}

/// A test on the low 32 bits of an argument: the kernel reads every
/// argument the rules look at as a 32-bit int.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Test {
    pub arg: u8,
    pub op: Op,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Eq(u32),
    Ne(u32),
    /// `arg & mask == value & mask`.
    Masked {
        mask: u32,
        value: u32,
    },
    /// `arg & mask != 0`: only made here, from rules with one bit each.
    Any(u32),
}

/// Holds when every test does; with none, always.
pub type Rule = Vec<Test>;

/// Rules by syscall number, and what a call gets when one holds.
#[derive(Clone, Debug, Default)]
pub struct Program {
    pub action: u32,
    pub rules: BTreeMap<u32, Vec<Rule>>,
}

/// `seccomp_data.args[arg]`'s low half.
fn arg_offset(arg: u8) -> u32 {
    let at = 16 + 8 * u32::from(arg);
    if cfg!(target_endian = "little") {
        at
    } else {
        at + 4
    }
}

/// The filter deciding `programs` (in order) on architecture `arch`,
/// refusing x32 numbers with `x32` where there are some; an error when
/// it would not fit the kernel's limits.
pub fn emit(programs: &[Program], arch: u32, x32: Option<u32>) -> Result<Filter, String> {
    let mut out = vec![
        ins(LD_W_ABS, 0, 0, 4), // seccomp_data.arch
        ins(JEQ_K, 1, 0, arch),
        ret(libc::SECCOMP_RET_KILL_PROCESS),
        ins(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
    ];
    if let Some(refusal) = x32 {
        out.push(ins(JGE_K, 0, 1, X32_BIT));
        out.push(ret(refusal));
    }
    let keys: BTreeSet<u32> = programs
        .iter()
        .flat_map(|p| p.rules.keys())
        .copied()
        .collect();
    let mut outcomes = BTreeMap::new();
    for &nr in &keys {
        let decisions: Vec<(u32, &[Rule])> = programs
            .iter()
            .filter_map(|p| p.rules.get(&nr).map(|r| (p.action, r.as_slice())))
            .collect();
        outcomes.insert(nr, block(&decisions)?);
    }
    let keys: Vec<u32> = keys.into_iter().collect();
    let mut patches = Vec::new();
    if keys.is_empty() {
        out.push(ret(libc::SECCOMP_RET_ALLOW));
    } else {
        let base = out.len();
        let mut searched = Vec::new();
        tree(&keys, &outcomes, &mut searched, &mut patches);
        patches.iter_mut().for_each(|(at, _)| *at += base);
        out.extend(searched);
    }
    // The blocks a leaf jumps to, rather than holding them.
    let mut starts = BTreeMap::new();
    for &(_, nr) in &patches {
        if let Outcome::Code(code) = &outcomes[&nr] {
            starts.insert(nr, out.len());
            out.extend_from_slice(code);
        }
    }
    for (at, nr) in patches {
        out[at].k = (starts[&nr] - at - 1) as u32;
    }
    if out.len() > MAX_LEN {
        return Err(format!(
            "seccomp: the filter needs {} instructions, over the kernel's {MAX_LEN}",
            out.len()
        ));
    }
    Ok(out)
}

/// What a listed number gets: one action whatever its arguments, or a
/// block of tests.
#[derive(Debug)]
enum Outcome {
    Ret(u32),
    Code(Vec<Insn>),
}

/// A search for the number (in the accumulator) among `keys` (sorted):
/// "allow" for none of them, else its outcome (`leaf`).
fn tree(
    keys: &[u32],
    outcomes: &BTreeMap<u32, Outcome>,
    out: &mut Vec<Insn>,
    patches: &mut Vec<(usize, u32)>,
) {
    if keys.len() <= LEAF {
        return leaf(keys, outcomes, out, patches);
    }
    let mid = keys.len() / 2;
    let mut left = Vec::new();
    let mut left_patches = Vec::new();
    tree(&keys[..mid], outcomes, &mut left, &mut left_patches);
    // Numbers from `keys[mid]` on: past the left half.
    match u8::try_from(left.len()) {
        Ok(past) => out.push(ins(JGE_K, past, 0, keys[mid])),
        Err(_) => {
            out.push(ins(JGE_K, 0, 1, keys[mid]));
            out.push(ins(JA, 0, 0, left.len() as u32));
        }
    }
    let at = out.len();
    patches.extend(left_patches.into_iter().map(|(i, nr)| (i + at, nr)));
    out.extend(left);
    tree(&keys[mid..], outcomes, out, patches);
}

/// Up to [`LEAF`] comparisons, "allow", then what they lead to: each
/// action returned whatever the arguments once, and each number's block
/// of tests; where the blocks are too long for 8-bit jumps, a jump to
/// the block instead, placed after the tree (`patches`: the jump's
/// index and the number).
fn leaf(
    keys: &[u32],
    outcomes: &BTreeMap<u32, Outcome>,
    out: &mut Vec<Insn>,
    patches: &mut Vec<(usize, u32)>,
) {
    let mut targets: Vec<Target> = Vec::new();
    let mut index = Vec::new();
    for &nr in keys {
        let target = match outcomes[&nr] {
            Outcome::Ret(action) => Target::Ret(action),
            Outcome::Code(_) => Target::Block(nr),
        };
        // Returns are shared; each block is its number's alone.
        let found = targets
            .iter()
            .position(|t| matches!(t, Target::Ret(_)) && *t == target);
        index.push(found.unwrap_or_else(|| {
            targets.push(target);
            targets.len() - 1
        }));
    }
    let size = |t: &Target, inline: bool| match (t, inline) {
        (Target::Block(nr), true) => match &outcomes[nr] {
            Outcome::Code(code) => code.len(),
            Outcome::Ret(_) => 1,
        },
        _ => 1,
    };
    let offsets = |inline: bool| -> Vec<usize> {
        let mut at = 0;
        targets
            .iter()
            .map(|t| {
                at += size(t, inline);
                at - size(t, inline)
            })
            .collect()
    };
    // Past the rest of the comparisons and the "allow".
    let jump = |i: usize, to: usize| keys.len() - i + to;
    let inline = offsets(true);
    let fits = (0..keys.len()).all(|i| jump(i, inline[index[i]]) <= 255);
    let at = if fits { inline } else { offsets(false) };
    for (i, &nr) in keys.iter().enumerate() {
        out.push(ins(JEQ_K, jump(i, at[index[i]]) as u8, 0, nr));
    }
    out.push(ret(libc::SECCOMP_RET_ALLOW));
    for t in targets {
        match t {
            Target::Ret(action) => out.push(ret(action)),
            Target::Block(nr) => match &outcomes[&nr] {
                Outcome::Code(code) if fits => out.extend_from_slice(code),
                _ => {
                    patches.push((out.len(), nr));
                    out.push(ins(JA, 0, 0, 0));
                }
            },
        }
    }
}

/// Where a leaf's comparison leads.
#[derive(PartialEq)]
enum Target {
    /// This action, whatever the arguments.
    Ret(u32),
    /// The block of tests of this number.
    Block(u32),
}

/// Aim the conditional jump at `at` (its true branch, or its false one)
/// at the instruction `to`.
fn aim(code: &mut [Insn], at: usize, on_true: bool, to: usize) -> Result<(), String> {
    let past = u8::try_from(to - at - 1)
        .map_err(|_| "seccomp: the rules on one syscall are too long for one filter".to_string())?;
    if on_true {
        code[at].jt = past;
    } else {
        code[at].jf = past;
    }
    Ok(())
}

/// One number's rules, program by program: the first that holds
/// returns its program's action. Each rule's tests in a row, a failed
/// one jumping to the next rule; the last, when it holds, to the
/// block's return of that action, after its "allow".
fn block(decisions: &[(u32, &[Rule])]) -> Result<Outcome, String> {
    let mut code = Vec::new();
    // Each rule's last test, when it holds: (index, on true, action).
    let mut holds: Vec<(usize, bool, u32)> = Vec::new();
    // The argument the accumulator holds on every way into the next
    // rule (the number itself at the start).
    let mut known: Option<u8> = None;
    let mut last: Option<u32> = None;
    'programs: for &(action, rules) in decisions {
        for rule in merged(rules) {
            let tests: Vec<&Test> = rule
                .iter()
                .filter(|t| !matches!(t.op, Op::Masked { mask: 0, .. }))
                .collect();
            if tests.is_empty() {
                // Holds whatever the arguments: nothing after it runs.
                last = Some(action);
                break 'programs;
            }
            let mut masked = false;
            // The other tests, when they fail: (index, on true).
            let mut fails: Vec<(usize, bool)> = Vec::new();
            for (n, t) in tests.iter().enumerate() {
                if known != Some(t.arg) {
                    code.push(ins(LD_W_ABS, 0, 0, arg_offset(t.arg)));
                    known = Some(t.arg);
                }
                // The instruction, and whether its true branch means
                // the test holds.
                let (insn, holds_on_true) = match t.op {
                    Op::Eq(v) => (ins(JEQ_K, 0, 0, v), true),
                    Op::Ne(v) => (ins(JEQ_K, 0, 0, v), false),
                    Op::Any(mask) => (ins(JSET_K, 0, 0, mask), true),
                    Op::Masked { mask, value } if value & mask == 0 => {
                        (ins(JSET_K, 0, 0, mask), false)
                    }
                    Op::Masked { mask, value }
                        if value & mask == mask && mask.count_ones() == 1 =>
                    {
                        (ins(JSET_K, 0, 0, mask), true)
                    }
                    Op::Masked { mask, value } => {
                        code.push(ins(AND_K, 0, 0, mask));
                        known = None;
                        masked = true;
                        (ins(JEQ_K, 0, 0, value & mask), true)
                    }
                };
                if n + 1 == tests.len() {
                    // Holds: the return; fails: on to the next rule.
                    holds.push((code.len(), holds_on_true, action));
                } else {
                    fails.push((code.len(), !holds_on_true));
                }
                code.push(insn);
            }
            let next = code.len();
            for (at, on_true) in fails {
                aim(&mut code, at, on_true, next)?;
            }
            // A failed test left its argument in the accumulator: known
            // when every test of the rule is on the same one, unmasked.
            let args: BTreeSet<u8> = tests.iter().map(|t| t.arg).collect();
            known = match (args.len(), masked) {
                (1, false) => args.first().copied(),
                _ => None,
            };
        }
    }
    if code.is_empty() {
        if let Some(action) = last {
            return Ok(Outcome::Ret(action));
        }
    }
    // What no rule decided: "allow", or the unconditional rule's action.
    code.push(ret(last.unwrap_or(libc::SECCOMP_RET_ALLOW)));
    let mut returns: BTreeMap<u32, usize> = BTreeMap::new();
    for (at, on_true, action) in holds {
        let to = *returns.entry(action).or_insert_with(|| {
            code.push(ret(action));
            code.len() - 1
        });
        aim(&mut code, at, on_true, to)?;
    }
    Ok(Outcome::Code(code))
}

/// `rules` of one program (one action, so their order does not matter)
/// with the rules that test one bit of one argument each (`has
/// S_ISUID`, `has S_ISGID`) made one test of both bits per argument.
fn merged(rules: &[Rule]) -> Vec<Rule> {
    if rules.iter().any(Vec::is_empty) {
        // Refused whatever the arguments.
        return vec![vec![]];
    }
    let mut bits: BTreeMap<u8, u32> = BTreeMap::new();
    let mut out = Vec::new();
    for rule in rules {
        match rule.as_slice() {
            [Test {
                arg,
                op: Op::Masked { mask, value },
            }] if mask.count_ones() == 1 && value & mask == *mask => {
                *bits.entry(*arg).or_default() |= mask;
            }
            _ => out.push(rule.clone()),
        }
    }
    // Where they stood does not matter: any rule that holds returns the
    // same action.
    out.extend(bits.into_iter().map(|(arg, mask)| {
        vec![Test {
            arg,
            op: Op::Any(mask),
        }]
    }));
    out
}
