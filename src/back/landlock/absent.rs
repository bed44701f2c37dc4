//! sbx's own protections (POLICY.md §7, §7a) on paths absent at launch:
//! one advisory line per protected name, at the place of its first path,
//! rather than one per writable tree (ten names each), which made the
//! reports of policies with thousands of writable rules tens of
//! megabytes of the same sentence.
//!
//! A line with many paths is still megabytes long at 10,000 writable
//! trees, so its text is not kept: each path is a few numbers (the
//! grant, its rights, the labels above it), and the text is written
//! where it is needed, into the artifact as it is serialised
//! ([`Report`]) or into a [`Precision`] for a caller that keeps the
//! report. The text of every line was 60-100 MiB of the peak at 100,000
//! rules (#38).
//!
//! The exact lines of carve-outs a mount makes exact (one per rule under
//! a broader one: every rule of some large policies, 45 MiB of text at
//! 100,000) are kept the same way: the grant, the mount, what it takes
//! back and from which labels.

use super::mounts::Fix;
use super::{access_words, line, push_joined, TARGET};
use crate::hashed::Map;
use crate::ir::{Access, Grant, Precision, Source, Status};
use serde::{Serialize, Serializer};
use std::fmt::{self, Display};

/// The absent protections met so far, by label, and the carve-outs.
#[derive(Default)]
pub(super) struct AbsentProtections<'a> {
    /// label → its group.
    groups: Map<String, Group>,
    /// Each carve-out's line (its index in the report) and what it says.
    carved: Vec<(usize, Carved)>,
    /// Each source's label, made once per source rather than per path.
    labels: Map<&'a Source, String>,
    /// The labels of the grants above each path, `from` of [`Entry`]:
    /// a tree's protections share theirs, so a list is kept once for a
    /// run of paths that have the same.
    froms: Vec<Vec<&'a str>>,
}

/// The absent paths of one label.
struct Group {
    /// The index of its line in the report.
    at: usize,
    paths: Vec<Entry>,
}

/// A carve-out made exact by a mount: the grant (its index in the IR),
/// the mount, what it takes back and the labels it comes from (an index
/// in `froms`).
#[derive(Clone, Copy)]
struct Carved {
    grant: u32,
    from: u32,
    fix: Fix,
    extra: Access,
}

/// One absent path: the grant (its index in the IR), what still applies
/// beneath it, and the labels it comes from (an index in `froms`).
#[derive(Clone, Copy)]
struct Entry {
    grant: u32,
    from: u32,
    extra: Access,
}

impl<'a> AbsentProtections<'a> {
    /// The `grant`th grant, at `source`, is absent: `extra` from `from`
    /// still applies beneath it. Its line is placed in `out` if it is
    /// the first of its label.
    pub(super) fn add(
        &mut self,
        out: &mut Vec<Precision>,
        source: &'a Source,
        grant: usize,
        extra: Access,
        from: Vec<&'a str>,
    ) {
        let e = Entry {
            grant: number(grant),
            from: self.from(from),
            extra,
        };
        let label = self.labels.entry(source).or_insert_with(|| source.label());
        match self.groups.get_mut(label.as_str()) {
            Some(g) => g.paths.push(e),
            None => {
                let at = out.len();
                // Its text is written by `Report`.
                out.push(line(label.clone(), "", Status::Wider, String::new()));
                self.groups
                    .insert(label.clone(), Group { at, paths: vec![e] });
            }
        }
    }

    /// The `grant`th grant is a carve-out that `fix` makes exact:
    /// Landlock alone grants `extra` from `from` beneath it. Its line is
    /// placed in `out`.
    pub(super) fn carved(
        &mut self,
        out: &mut Vec<Precision>,
        grant: usize,
        fix: Fix,
        extra: Access,
        from: Vec<&'a str>,
    ) {
        let c = Carved {
            grant: number(grant),
            from: self.from(from),
            fix,
            extra,
        };
        self.carved.push((out.len(), c));
        // Its label, target and text are written by `Report`.
        out.push(line(String::new(), "", Status::Exact, String::new()));
    }

    /// `from`'s number in `froms`.
    fn from(&mut self, from: Vec<&'a str>) -> u32 {
        if self.froms.last() != Some(&from) {
            self.froms.push(from);
        }
        u32::try_from(self.froms.len() - 1).expect("fewer than 2^32 lists")
    }

    /// The report of `lines` (the target's, with a placeholder for each
    /// group's line and carve-out's) and of these.
    pub(super) fn finish(
        self,
        mut lines: Vec<Precision>,
        fs: &'a [Grant],
        target: &str,
    ) -> Report<'a> {
        let mut absent: Vec<(usize, Vec<Entry>)> = Vec::with_capacity(self.groups.len());
        for (_, g) in self.groups {
            let l = &mut lines[g.at];
            l.target = target.to_string();
            l.advisory = true;
            absent.push((g.at, g.paths));
        }
        absent.sort_by_key(|&(at, _)| at);
        Report {
            lines,
            absent,
            carved: self.carved,
            froms: self.froms,
            fs,
            target: target.to_string(),
            moved: target == TARGET,
        }
    }
}

fn number(grant: usize) -> u32 {
    u32::try_from(grant).expect("fewer than 2^32 grants")
}

/// A precision report whose absent protections' lines ([`AbsentProtections`])
/// have no text yet: [`Serialize`] writes it as the list of
/// [`Precision`] lines it stands for, and [`Report::into_lines`] makes
/// that list.
pub struct Report<'a> {
    /// The lines, those of `absent` with an empty reason.
    lines: Vec<Precision>,
    /// Each absent group's line (its index in `lines`) and paths, in
    /// the order of `lines`.
    absent: Vec<(usize, Vec<Entry>)>,
    /// Each carve-out's line (its index in `lines`, where it is a
    /// placeholder), in the order of `lines`.
    carved: Vec<(usize, Carved)>,
    froms: Vec<Vec<&'a str>>,
    fs: &'a [Grant],
    /// The carve-outs' lines' target.
    target: String,
    /// The Linux artifact's lines say that `sbx run` moves what was
    /// created aside (landlockconfig's do not).
    moved: bool,
}

impl<'a> Report<'a> {
    /// `l` after the other lines.
    pub fn push(&mut self, l: Precision) {
        self.lines.push(l);
    }

    /// The lines without those of absent protections (all advisory) and
    /// of carve-outs a mount makes exact (all exact): the rest is what
    /// `enforcement = "required"` and the linter read.
    pub fn lean(self) -> Vec<Precision> {
        let mut skip = self.absent.iter().map(|&(at, _)| at).peekable();
        let mut carved = self.carved.iter().map(|&(at, _)| at).peekable();
        self.lines
            .into_iter()
            .enumerate()
            .filter(|&(i, _)| skip.next_if_eq(&i).is_none() && carved.next_if_eq(&i).is_none())
            .map(|(_, l)| l)
            .collect()
    }

    /// Every line, with its text.
    pub fn into_lines(self) -> Vec<Precision> {
        let texts: Vec<(usize, String)> = self
            .absent
            .iter()
            .map(|(at, paths)| (*at, self.reason(paths).to_string()))
            .collect();
        let carved: Vec<(usize, Precision)> = self
            .carved
            .iter()
            .map(|(at, c)| (*at, self.carved_line(c)))
            .collect();
        let mut lines = self.lines;
        for (at, text) in texts {
            lines[at].reason = text;
        }
        for (at, l) in carved {
            lines[at] = l;
        }
        lines
    }

    fn carved_line(&self, c: &Carved) -> Precision {
        let g = &self.fs[c.grant as usize];
        line(
            g.source.label(),
            &self.target,
            Status::Exact,
            self.carved_reason(c).to_string(),
        )
    }

    fn carved_reason<'r>(&'r self, c: &'r Carved) -> CarvedReason<'r, 'a> {
        CarvedReason { report: self, c }
    }

    fn reason<'r>(&'r self, paths: &'r [Entry]) -> Reason<'r, 'a> {
        Reason {
            report: self,
            paths,
        }
    }
}

/// The text of one absent group's line.
struct Reason<'r, 'a> {
    report: &'r Report<'a>,
    paths: &'r [Entry],
}

impl Display for Reason<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.report;
        let moved = if r.moved {
            "; sbx run moves what it created aside when the run ends \
             (NAME.sbx-blocked), so nothing planted there runs later"
        } else {
            ""
        };
        let from = |e: &Entry| &r.froms[e.from as usize];
        match self.paths {
            [e] => write!(
                f,
                // The path is the rule's own (its label names it): left
                // out, so that the names sharing this reason are said
                // once (`sbx run --report` groups them).
                "protection of a path that does not exist at launch: a mount needs \
                 an existing path and sbx creates nothing in the workspace, so \
                 {} from {} still apply beneath it if the command creates it (SBPL \
                 stops its creation by name){moved}. {ABSENT_ADVICE}",
                access_words(e.extra),
                from(e).join(", "),
            ),
            paths => {
                write!(
                    f,
                    "protection of {} paths that do not exist at launch: a mount needs \
                     an existing path and sbx creates nothing in the workspace, so the \
                     rights of the grants above each still apply beneath it if the \
                     command creates it (SBPL stops its creation by name){moved}. \
                     {ABSENT_ADVICE}. The paths, with what still applies: ",
                    paths.len()
                )?;
                // `PATH (RIGHTS from LABELS)`, `; ` between them, a
                // path at a time: at 10,000 writable trees the whole is
                // megabytes.
                let mut one = String::new();
                for (k, e) in paths.iter().enumerate() {
                    one.clear();
                    if k > 0 {
                        one.push_str("; ");
                    }
                    one.push_str(&r.fs[e.grant as usize].path);
                    one.push_str(" (");
                    push_joined(&mut one, e.extra.each_name());
                    one.push_str(" from ");
                    push_joined(&mut one, from(e).iter().copied());
                    one.push(')');
                    f.write_str(&one)?;
                }
                Ok(())
            }
        }
    }
}

/// The text of one carve-out's line.
struct CarvedReason<'r, 'a> {
    report: &'r Report<'a>,
    c: &'r Carved,
}

impl Display for CarvedReason<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.report;
        let path = &r.fs[self.c.grant as usize].path;
        write!(
            f,
            "{} (with Landlock alone, whose rights are additive, {} from {} still apply \
             beneath {path})",
            self.c.fix.claim(path),
            access_words(self.c.extra),
            r.froms[self.c.from as usize].join(", "),
        )
    }
}

/// A grant's label, written when it is serialised.
struct Label<'a>(&'a Source);

impl Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.label())
    }
}

const ABSENT_ADVICE: &str = "Reported, never refused by enforcement = \"required\": sbx adds \
     it, the policy does not (create the path before the run to make it exact, or name it in \
     a rule to decide it yourself)";

/// A line as [`Precision`] serialises, its reason written as it is
/// made ([`Serializer::collect_str`]: serde_json escapes each piece
/// straight into its output).
#[derive(Serialize)]
#[serde(rename = "Precision")]
struct LineOut<'l, L: Display, R: Display> {
    #[serde(serialize_with = "collect")]
    rule: L,
    target: &'l str,
    status: Status,
    #[serde(serialize_with = "collect")]
    reason: R,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    advisory: bool,
}

fn collect<R: Display, S: Serializer>(r: &R, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(r)
}

impl Serialize for Report<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.lines.len()))?;
        let mut absent = self.absent.iter().peekable();
        let mut carved = self.carved.iter().peekable();
        for (i, l) in self.lines.iter().enumerate() {
            if let Some((_, paths)) = absent.next_if(|(at, _)| *at == i) {
                seq.serialize_element(&LineOut {
                    rule: &l.rule,
                    target: &l.target,
                    status: l.status,
                    reason: self.reason(paths),
                    advisory: l.advisory,
                })?;
            } else if let Some((_, c)) = carved.next_if(|(at, _)| *at == i) {
                seq.serialize_element(&LineOut {
                    rule: Label(&self.fs[c.grant as usize].source),
                    target: &self.target,
                    status: Status::Exact,
                    reason: self.carved_reason(c),
                    advisory: false,
                })?;
            } else {
                seq.serialize_element(l)?;
            }
        }
        seq.end()
    }
}
