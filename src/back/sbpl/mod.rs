//! `--target macos`: the IR as an SBPL profile for `/usr/bin/sandbox-exec`.
//!
//! Layout (docs/macos.md explains each part): header comments, `(version
//! 1)`, `(deny default)`, the baseline ordinary programs need, network,
//! filesystem grants (shallow first, each denying what it lacks before
//! allowing what it has), the sandboxed program, baseline file access,
//! directory protection, and the precision report as comments.

mod files;
mod net;
mod paths;
mod precision;
mod render;
mod shape;
mod texts;

use super::landlock::ProxySpec;
use super::{EmitError, Emitted};
use crate::ir::{self, Ir, PathMode, Precision};
use crate::sbpl::{escape_string, EscapeError};
use minijinja::value::Value;
use render::{comment, sbpl};
use serde::{Deserialize, Serialize};

/// The target name in precision reports.
pub const TARGET: &str = "macos";
/// `sandbox-exec -D PROGRAM=…`: the program a profile compiled with
/// `[commands]` lets run besides the listed executables.
pub const PROGRAM_PARAM: &str = "PROGRAM";
/// `sandbox-exec -D PROXY_HTTP_PORT=… -D PROXY_SOCKS_PORT=…`: where a
/// profile with host rules finds `sbx run`'s filtering proxy on
/// localhost (HTTP, SOCKS5), the only outbound TCP it allows besides
/// the loopback rules.
pub const PROXY_HTTP_PARAM: &str = "PROXY_HTTP_PORT";
pub const PROXY_SOCKS_PARAM: &str = "PROXY_SOCKS_PORT";
/// Both, in the order of the proxy's listeners (`runtime::proxy`): HTTP, SOCKS5.
pub const PROXY_PARAMS: [&str; 2] = [PROXY_HTTP_PARAM, PROXY_SOCKS_PARAM];
/// Prefix of the header line that carries [`Meta`] as JSON.
pub const META_PREFIX: &str = ";; sbx-meta: ";

/// Choices that are not in the IR.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Absolute spellings of the program `sbx run` starts. Given, they
    /// are allowed to run as literals; otherwise a profile with
    /// `[commands]` reads them from the `PROGRAM` parameter.
    pub program: Vec<String>,
}

/// What `sbx run --artifact profile.sb` needs besides the SBPL: the
/// parameters to pass and the parts of the policy a profile cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub sbx: u32,
    pub target: String,
    pub policy_hash: String,
    /// `-D NAME=value` parameters the profile reads.
    pub params: Vec<String>,
    pub env: ir::Env,
    pub limits: ir::Limits,
    /// Host rules: the rules of the proxy `sbx run` starts, whose ports
    /// the profile reads ([`PROXY_PARAMS`]). Absent: no proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxySpec>,
}

impl Meta {
    /// The metadata line of a profile sbx wrote, if any.
    pub fn read(profile: &str) -> Option<Result<Meta, serde_json::Error>> {
        profile
            .lines()
            .take_while(|l| l.starts_with(";;") || l.is_empty())
            .find_map(|l| l.strip_prefix(META_PREFIX))
            .map(serde_json::from_str)
    }
}

/// One `(allow|deny ops… filters…)` form; filters are finished SBPL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    pub allow: bool,
    pub ops: Vec<&'static str>,
    pub filters: Vec<String>,
    pub comment: Option<String>,
}

/// An escaping failure, blamed on `rule`.
fn esc_err(rule: &str) -> impl Fn(EscapeError) -> EmitError + '_ {
    move |e| EmitError {
        rule: rule.to_string(),
        message: format!("cannot be written as an SBPL string: {e}"),
    }
}

pub fn emit(ir: &Ir) -> Result<Emitted, EmitError> {
    emit_with(ir, &Options::default())
}

/// The rules of the proxy a profile of `ir` needs, if it has host rules
/// (docs/macos.md, "Host rules: the proxy").
/// The precision lines of `ir`'s `[[net]]` rules in the macOS profile,
/// one per rule (what `explain` and SBX022 say of a rule, too).
pub fn net_precision(ir: &Ir) -> Vec<crate::ir::Precision> {
    net::precision(ir, TARGET)
}

pub fn proxy_spec(ir: &Ir) -> Option<ProxySpec> {
    net::proxy_spec(ir)
}

pub fn emit_with(ir: &Ir, opts: &Options) -> Result<Emitted, EmitError> {
    super::collect(size_hint(ir), |out| emit_to(ir, opts, out))
}

/// Room for the whole profile up front: about 500 bytes a grant.
pub(crate) fn size_hint(ir: &Ir) -> usize {
    ir.fs.len() * 600
}

/// [`emit_with`], handing the text to `out` piece by piece as it is
/// rendered instead of keeping it. Returns the precision report. On an
/// error, `out` may have had part of the text.
pub fn emit_to(
    ir: &Ir,
    opts: &Options,
    out: &mut dyn FnMut(&[u8]),
) -> Result<Vec<Precision>, EmitError> {
    let fs = files::Files::new(ir, &opts.program)?;
    let network = net::build(ir);
    let mach = mach_lookup(ir);
    if network.is_err() || mach.is_err() {
        // Errors in the filesystem rules are reported first: look for
        // those, rendering nothing.
        fs.grants(|_| Ok(()))?;
        fs.after(ir, &opts.program)?;
    }
    let (network, mach) = (network?, mach?);
    let proxy = proxy_spec(ir);
    let mut params = fs.params.clone();
    if proxy.is_some() {
        params.extend(PROXY_PARAMS);
    }
    let meta = Meta {
        sbx: ir::FORMAT_VERSION,
        target: TARGET.into(),
        policy_hash: ir.policy_hash.clone(),
        params: params.iter().map(|p| p.to_string()).collect(),
        env: ir.env.clone(),
        limits: ir.limits.clone(),
        proxy,
    };
    let head = Value::from_iter([
        ("version", sbpl(env!("CARGO_PKG_VERSION"))),
        ("hash", comment(&ir.policy_hash)),
        (
            "mode",
            sbpl(match ir.mode {
                PathMode::Portable => "portable",
                PathMode::Resolved => "resolved",
            }),
        ),
        (
            "usage",
            Value::from(
                usage(&params)
                    .iter()
                    .map(|l| comment(l))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "meta",
            comment(&serde_json::to_string(&meta).expect("meta serialises")),
        ),
        ("pty", Value::from(ir.macos.allow_pty)),
        ("mach_lookup", Value::from(mach)),
        ("network", render::rules(&network.rules)),
        ("outbound", Value::from(network.outbound)),
        ("dns", Value::from(network.dns)),
    ]);
    render::head(&head, out).map_err(template_err)?;
    let mut grants = render::RuleWriter::new().map_err(template_err)?;
    fs.grants(|r| grants.write(r, out).map_err(template_err))?;
    let after = fs.after(ir, &opts.program)?;
    drop(fs); // the index, before the precision lines are made
    let files::After {
        program,
        traversal,
        protect,
    } = after;
    let protects = !protect.is_empty();
    let end = Value::from_iter([
        ("pty", Value::from(ir.macos.allow_pty)),
        (
            "program",
            program.as_ref().map_or(Value::from(()), render::rule),
        ),
        (
            "traversal",
            Value::from(traversal.into_iter().map(sbpl).collect::<Vec<_>>()),
        ),
        ("protect", Value::from(protects)),
    ]);
    render::end(&end, out).map_err(template_err)?;
    // The rules that protect directories one at a time, as the grants:
    // hundreds of thousands of filters at 100,000 rules.
    let mut rules = render::RuleWriter::new().map_err(template_err)?;
    for r in &protect {
        rules.write(r, out).map_err(template_err)?;
    }
    drop(protect);
    // Made last, when the rules are written and gone: a line per policy
    // rule, 25 MiB at 100,000 rules, was alive through the whole profile.
    let precision = precision::report(ir);
    let tail = Value::from_iter([
        ("protect", Value::from(protects)),
        (
            "precision",
            Value::from(
                precision
                    .iter()
                    .map(|p| comment(&precision_line(p)))
                    .collect::<Vec<_>>(),
            ),
        ),
    ]);
    render::precision(&tail, out).map_err(template_err)?;
    Ok(precision)
}

/// `[macos] mach_lookup` as SBPL strings.
fn mach_lookup(ir: &Ir) -> Result<Vec<Value>, EmitError> {
    let mut mach = Vec::new();
    for (i, name) in ir.macos.mach_lookup.iter().enumerate() {
        let label = format!("macos.mach_lookup[{i}]");
        if name.contains("${") {
            return Err(EmitError {
                rule: label,
                message: format!(
                    "{name:?}: `${{` would be expanded by the sandbox compiler; not a Mach service name"
                ),
            });
        }
        mach.push(sbpl(escape_string(name).map_err(esc_err(&label))?));
    }
    Ok(mach)
}

fn template_err(e: minijinja::Error) -> EmitError {
    EmitError {
        rule: "SBPL template".into(),
        message: e.to_string(),
    }
}

fn precision_line(p: &Precision) -> String {
    format!(
        "{:<11} {} [{}]: {}",
        p.status.name(),
        p.rule,
        p.target,
        p.reason
    )
}

/// How to run the profile, for the header.
fn usage(params: &[&'static str]) -> Vec<String> {
    let mut cmd = "/usr/bin/sandbox-exec -f profile.sb".to_string();
    for p in params {
        cmd.push_str(&format!(" -D {p}=…"));
    }
    cmd.push_str(" -- COMMAND [ARGS…]");
    let mut lines = vec![format!("Run: {cmd}")];
    let width = params.iter().map(|p| p.len()).max().unwrap_or(0).max(9);
    for p in params {
        let what = match *p {
            ir::WORKSPACE_PARAM => "the workspace directory",
            ir::HOME_PARAM => "the home directory",
            ir::TEMP_PARAM => "the temporary directory ($TMPDIR)",
            PROGRAM_PARAM => "absolute path of COMMAND, which [commands] does not list",
            PROXY_HTTP_PARAM => "port of a filtering HTTP proxy on localhost (host rules)",
            PROXY_SOCKS_PARAM => "port of a filtering SOCKS5 proxy on localhost (host rules)",
            _ => "",
        };
        lines.push(format!("  {p:<width$} {what}"));
    }
    if params.iter().any(|p| !PROXY_PARAMS.contains(p)) {
        lines.push(
            "Values are absolute paths with symlinks resolved (realpath); `sbx run` fills them in."
                .into(),
        );
    }
    if params.iter().any(|p| PROXY_PARAMS.contains(p)) {
        lines.extend(
            [
                "PROXY_* are port numbers. Host rules: outbound TCP reaches only those two ports",
                "on localhost (and the loopback rules), where `sbx run` starts a proxy that",
                "enforces the [[net]] rules (sbx-meta's \"proxy\") and fills them in. Without",
                "them the profile does not compile, so nothing runs.",
            ]
            .map(String::from),
        );
    }
    lines
}
