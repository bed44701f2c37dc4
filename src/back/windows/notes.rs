//! The precision report: what Windows enforces of each rule, and how far
//! that is from what the policy says.

use super::{placement, AppContainer, Placement, Token, TARGET};
use crate::hashed::Map;
use crate::ir::{Ir, Ports, Precision, Status};

/// Report lines in insertion order, deduplicated through a map from each
/// line's hash to where lines with that hash are: linear overall (a scan
/// per line would be quadratic, minutes for 100,000 rules) without a
/// second copy of every line.
#[derive(Default)]
pub(super) struct Notes(pub(super) Vec<Precision>, Map<u64, Vec<usize>>);

impl Notes {
    /// Presets give several grants one label: report each line once.
    pub(super) fn add(&mut self, rule: impl AsRef<str>, status: Status, reason: impl AsRef<str>) {
        self.push(rule.as_ref(), status, reason.as_ref(), false);
    }

    /// [`Notes::add`] for a line `required` does not refuse
    /// (`Precision::advisory`).
    pub(super) fn add_advisory(
        &mut self,
        rule: impl AsRef<str>,
        status: Status,
        reason: impl AsRef<str>,
    ) {
        self.push(rule.as_ref(), status, reason.as_ref(), true);
    }

    /// A line is copied only when it is new: most repeat (a protection's
    /// line for every writable tree).
    fn push(&mut self, rule: &str, status: Status, reason: &str, advisory: bool) {
        use std::hash::BuildHasher;
        let h = self
            .1
            .hasher()
            .hash_one((rule, std::mem::discriminant(&status), reason));
        let same = self.1.entry(h).or_default();
        let known = same.iter().any(|&i| {
            let q = &self.0[i];
            q.rule == rule && q.status == status && q.reason == reason && q.advisory == advisory
        });
        if !known {
            same.push(self.0.len());
            self.0.push(Precision {
                rule: rule.into(),
                target: TARGET.into(),
                status,
                reason: reason.into(),
                advisory,
            });
        }
    }
}

pub(super) fn fs_notes(
    ir: &Ir,
    token: Option<&Token>,
    ac: Option<&AppContainer>,
    notes: &mut Notes,
) {
    if ac.is_some() {
        notes.add(
            "fs",
            Status::Wider,
            "an AppContainer can also read what ALL APPLICATION PACKAGES may read \
             (the Windows directory, Program Files)",
        );
        // Said once for all protections, not per path.
        if ir.fs.iter().any(|g| {
            matches!(g.source, crate::ir::Source::Protected { .. })
                && placement(ir, g) == Placement::Acl
        }) {
            notes.add_advisory(
                "protected paths",
                Status::Wider,
                "ACEs belong to a file, not to its name: renaming a directory above a \
                 protected path inside a writable grant (.git above .git/hooks) carries the \
                 deny ACEs away with it, and a directory made or renamed into that name \
                 (ren stash .git) has the rights of the grant around it; Windows has no \
                 rule by name and no sweep after the run",
            );
        }
        for g in &ir.fs {
            let a = g.access;
            match placement(ir, g) {
                Placement::Acl => {}
                Placement::ReadableByAll => {
                    notes.add(
                        g.source.label(),
                        Status::Exact,
                        "readable by ALL APPLICATION PACKAGES already; no ACL change",
                    );
                    continue;
                }
                Placement::Outside => {
                    notes.add(
                        g.source.label(),
                        Status::Narrower,
                        "sbx changes ACLs only under the workspace, home and temp \
                         directories; elsewhere the container has only what the existing \
                         ACL gives AppContainers",
                    );
                    continue;
                }
            }
            let parent = super::enclosing(ir, &g.path).unwrap_or_default();
            let lost = parent.minus(a);
            if lost.writes() && g.kind == crate::ir::PathKind::Missing {
                let reason = "the path does not exist at launch and ACEs attach only to \
                              existing files: the child can create it with the rights of the \
                              directory above";
                // sbx's own protections are reported, not refused (as on Linux).
                if matches!(
                    g.source,
                    crate::ir::Source::Protected { .. } | crate::ir::Source::Covered { .. }
                ) {
                    notes.add_advisory(g.source.label(), Status::Wider, reason);
                } else {
                    notes.add(g.source.label(), Status::Wider, reason);
                }
            } else if lost.delete && parent.delete {
                notes.add(
                    g.source.label(),
                    Status::Wider,
                    "the directory above grants delete-child, which NTFS honours whatever \
                     the path's own ACL denies: the child can rename or remove it and \
                     create it anew with the directory's rights",
                );
            }
            if a.create != a.update {
                notes.add(
                    g.source.label(),
                    Status::Wider,
                    "NTFS uses one bit for adding a file to a directory and writing file data: \
                     create and update are granted together",
                );
            } else {
                notes.add(
                    g.source.label(),
                    Status::Exact,
                    "ACL grant to the AppContainer SID",
                );
            }
        }
        return;
    }
    let low = token.is_some_and(|t| t.integrity.is_some());
    for g in &ir.fs {
        notes.add(
            g.source.label(),
            Status::Wider,
            "no per-path filesystem enforcement with a job alone: the child reads (and, unless \
             the token is low integrity, writes) whatever the user can; set \
             windows.appcontainer = true for ACL-based grants",
        );
        if low && g.access.writes() {
            notes.add(
                g.source.label(),
                Status::Narrower,
                "a low-integrity token cannot write where the integrity label is medium \
                 (most user files), whatever this rule grants",
            );
        }
    }
}

pub(super) fn net_notes(ir: &Ir, ac: bool, notes: &mut Notes) {
    let n = &ir.net;
    let open = n.connect == Ports::All && n.bind == Ports::All && n.other_protocols;
    let closed = n.connect == Ports::None && n.bind == Ports::None && !n.other_protocols;
    if !ac {
        if closed {
            notes.add(
                "net",
                Status::Unsupported,
                "network deny needs AppContainer (windows.appcontainer = true): a job or a \
                 restricted token does not block the network",
            );
        } else if !open {
            notes.add(
                "net",
                Status::Wider,
                "no network filtering without AppContainer: all traffic is allowed",
            );
        }
        return;
    }
    if closed {
        notes.add(
            "net",
            Status::Exact,
            "AppContainer without network capabilities: all traffic is dropped, loopback included",
        );
        return;
    }
    for r in &n.rules {
        let label = format!("net[{}] ({}:{}:{})", r.index, r.file, r.line, r.column);
        let loopback = matches!(r.host.as_str(), "localhost" | "127.0.0.1" | "::1" | "[::1]");
        let (status, reason) = if !r.allow {
            (
                Status::Unsupported,
                "deny rules cannot be expressed with AppContainer capabilities",
            )
        } else if r.bind {
            (
                Status::Narrower,
                "listening needs internetClientServer, which sbx does not grant",
            )
        } else if loopback {
            (
                Status::Narrower,
                "an AppContainer cannot reach loopback, even with internetClient",
            )
        } else if r.host == "*" && r.port.is_none() {
            (
                Status::Exact,
                "internetClient: outbound to the Internet (private networks excluded)",
            )
        } else {
            (
                Status::Wider,
                "internetClient allows outbound traffic to any host and port; host and port \
                 filtering is cooperative only",
            )
        };
        notes.add(label, status, reason);
    }
}
