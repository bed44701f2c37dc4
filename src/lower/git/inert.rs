//! Which git configs run nothing (docs/protected.md, "Inert git
//! configs"). A config the command made during the run is kept after it
//! only when every key in it is one of [`INERT_KEYS`]: the settings
//! `git init`, `git clone`, `git remote add` and `git config user.*`
//! write, none of which makes git start a program or read another file.
//! Anything else, known or not, counts as able to run code: a list of
//! what is dangerous would miss the next key git adds.

use super::config;

/// One family of inert keys: `section.key`, or `section.<any>.key` when
/// `any_subsection` (a remote's, branch's or submodule's name).
pub struct Inert {
    pub section: &'static str,
    pub any_subsection: bool,
    pub keys: &'static [&'static str],
}

/// The allow-list, in lower case (git compares section and key names
/// without case). Kept out on purpose: `remote.*.uploadpack` and
/// `receivepack` (programs run on fetch and push), `submodule.*.update`
/// (`!command`), `include.*` and `includeIf.*` (another file's keys),
/// `url.*` (rewrites where a fetch goes, to a transport of its choice).
pub const INERT_KEYS: &[Inert] = &[
    Inert {
        section: "remote",
        any_subsection: true,
        keys: &[
            "url", "pushurl", "fetch", "push", "tagopt", "prune", "mirror",
        ],
    },
    Inert {
        section: "branch",
        any_subsection: true,
        keys: &["remote", "pushremote", "merge", "rebase", "description"],
    },
    Inert {
        section: "core",
        any_subsection: false,
        keys: &[
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
        ],
    },
    Inert {
        section: "extensions",
        any_subsection: false,
        keys: &["objectformat", "refstorage"],
    },
    Inert {
        section: "user",
        any_subsection: false,
        keys: &["name", "email"],
    },
    Inert {
        section: "submodule",
        any_subsection: true,
        keys: &["url", "active"],
    },
];

/// What a config holds, for the after-run check.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Only keys of [`INERT_KEYS`] (or none).
    Inert,
    /// These keys (as git names them, each once, in file order) are not.
    Keys(Vec<String>),
    /// Not a config git would read (a rejected line, not UTF-8): git
    /// would refuse it, but what sbx cannot read it cannot call inert.
    Unparsable,
}

impl Verdict {
    /// Why a config moves aside, for a warning ("it sets …"); `None`
    /// when it stays.
    pub fn why(&self) -> Option<String> {
        match self {
            Verdict::Inert => None,
            Verdict::Keys(k) => Some(format!(
                "it sets {}, outside the inert keys sbx keeps (docs/protected.md)",
                show(k)
            )),
            Verdict::Unparsable => Some(String::from(
                "it does not parse as a git config (what cannot be read counts as able to \
                 run code)",
            )),
        }
    }
}

/// Check a config file's bytes.
pub fn check(bytes: &[u8]) -> Verdict {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Verdict::Unparsable;
    };
    let Some(entries) = config::parse_strict(text) else {
        return Verdict::Unparsable;
    };
    let mut keys: Vec<String> = Vec::new();
    for e in &entries {
        let inert = INERT_KEYS.iter().any(|i| {
            i.section == e.section
                && i.any_subsection == e.subsection.is_some()
                && i.keys.contains(&e.key.as_str())
        });
        if !inert {
            let name = match &e.subsection {
                Some(sub) => format!("{}.{sub}.{}", e.section, e.key),
                None => format!("{}.{}", e.section, e.key),
            };
            if !keys.contains(&name) {
                keys.push(name);
            }
        }
    }
    if keys.is_empty() {
        Verdict::Inert
    } else {
        Verdict::Keys(keys)
    }
}

/// The keys for a warning: at most `MAX_SHOWN`, control characters
/// escaped (a subsection is the command's text, written to the user's
/// terminal).
pub fn show(keys: &[String]) -> String {
    const MAX_SHOWN: usize = 5;
    let mut shown: Vec<String> = keys
        .iter()
        .take(MAX_SHOWN)
        .map(|k| {
            k.chars()
                .take(100)
                .flat_map(|c| {
                    if c.is_control() {
                        c.escape_default().collect::<Vec<_>>()
                    } else {
                        vec![c]
                    }
                })
                .collect()
        })
        .collect();
    if keys.len() > MAX_SHOWN {
        shown.push(format!("and {} more", keys.len() - MAX_SHOWN));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &[&str]) -> Verdict {
        Verdict::Keys(v.iter().map(|k| k.to_string()).collect())
    }

    #[test]
    fn every_allowed_key_is_inert() {
        for i in INERT_KEYS {
            for k in i.keys {
                let text = if i.any_subsection {
                    format!("[{} \"x\"]\n\t{k} = v\n", i.section)
                } else {
                    format!("[{}]\n\t{k} = v\n", i.section)
                };
                assert_eq!(check(text.as_bytes()), Verdict::Inert, "{text}");
            }
        }
    }

    #[test]
    fn what_git_init_clone_and_remote_add_write_is_inert() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\
                    \tbare = false\n\tlogallrefupdates = true\n\
                    [remote \"origin\"]\n\turl = https://example.com/r.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                    [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\
                    [user]\n\tname = x\n";
        assert_eq!(check(text.as_bytes()), Verdict::Inert);
        assert_eq!(check(b""), Verdict::Inert);
        assert_eq!(check(b"# only a comment\n"), Verdict::Inert);
    }

    #[test]
    fn each_forbidden_family_is_named() {
        for (text, key) in [
            ("[core]\n\tfsmonitor = touch /tmp/x\n", "core.fsmonitor"),
            ("[core]\n\thooksPath = h\n", "core.hookspath"),
            ("[core]\n\tsshCommand = evil\n", "core.sshcommand"),
            (
                "[remote \"o\"]\n\tuploadpack = evil\n",
                "remote.o.uploadpack",
            ),
            (
                "[remote \"o\"]\n\treceivepack = evil\n",
                "remote.o.receivepack",
            ),
            (
                "[submodule \"s\"]\n\tupdate = !evil\n",
                "submodule.s.update",
            ),
            ("[include]\n\tpath = ../x\n", "include.path"),
            (
                "[includeIf \"gitdir:/\"]\n\tpath = x\n",
                "includeif.gitdir:/.path",
            ),
            (
                "[url \"ext::sh\"]\n\tinsteadOf = https://\n",
                "url.ext::sh.insteadof",
            ),
            ("[alias]\n\tst = !evil\n", "alias.st"),
            ("[filter \"f\"]\n\tclean = evil\n", "filter.f.clean"),
            (
                "[extensions]\n\tworktreeConfig = true\n",
                "extensions.worktreeconfig",
            ),
            // The right key in the wrong shape: no subsection, or one
            // where git takes none.
            ("[remote]\n\turl = x\n", "remote.url"),
            ("[core \"x\"]\n\tbare = true\n", "core.x.bare"),
            ("[user]\n\tsigningkey = k\n", "user.signingkey"),
        ] {
            assert_eq!(check(text.as_bytes()), keys(&[key]), "{text}");
        }
    }

    #[test]
    fn names_are_compared_as_git_compares_them() {
        // Section and key names without case, the old `[a.b]` spelling
        // too; a subsection with quotes and escapes is any name.
        assert_eq!(
            check(b"[REMOTE \"Or\\\"ig in\"]\n\tURL = x\n[Core]\n\tFileMode = 1\n[Branch.Main]\n\tMerge = m\n"),
            Verdict::Inert
        );
        assert_eq!(
            check(b"[CORE]\n\tFsMonitor = x\n[Remote \"A\"]\n\tUploadPack = y\n[core]\n\tfsmonitor = z\n"),
            keys(&["core.fsmonitor", "remote.A.uploadpack"])
        );
    }

    #[test]
    fn what_does_not_parse_is_unsafe() {
        for text in [
            &b"[core\n\tfsmonitor = x\n"[..],
            b"bare = true\n",
            b"[core]\n\tbare = \"true\n",
            b"[core]\n\tbare = a\\q\n",
            b"[core]\n\t1bare = true\n",
            b"[remote \"o]\n\turl = x\n",
            b"[user]\n\tname = \xff\n",
        ] {
            assert_eq!(check(text), Verdict::Unparsable, "{text:?}");
        }
    }

    #[test]
    fn shown_keys_are_bounded_and_escaped() {
        let many: Vec<String> = (0..7).map(|i| format!("a.k{i}")).collect();
        assert_eq!(show(&many), "a.k0, a.k1, a.k2, a.k3, a.k4, and 2 more");
        assert_eq!(
            show(&["remote.\u{1b}[2J.uploadpack".into()]),
            "remote.\\u{1b}[2J.uploadpack"
        );
    }
}
