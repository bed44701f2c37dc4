//! Git repositories the command made or changed below a writable tree's
//! top (docs/protected.md, "Repositories made during the run"). Only
//! the names at each tree's top are protected before the run; a
//! repository created below it (`git init sub`, `cargo new app`) is not,
//! and git would run its hooks and config outside the sandbox later: on
//! the next `git status` there, or at the top, which recurses into a
//! submodule entry. Once the tree has ended, `sbx run` looks to the
//! nested search's depth and moves aside what of them changed during
//! the run, as `planted` does for the protections absent at launch.

use super::beneath::{join, Top, Tops};
use std::collections::HashSet;

/// What in a git directory makes git run something: hooks, and the
/// config (and the files that name where git finds them).
const PARTS: [&str; 4] = ["hooks", "config", "config.worktree", "commondir"];

/// A moment, as file timestamps give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(i64, i64);

impl Stamp {
    /// Now, by the coarse clock file timestamps are taken from: anything
    /// changed from here on has a ctime at least this (a fine-grained
    /// ctime is never below the coarse clock). ctime cannot be set back.
    pub fn now() -> Stamp {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec to fill.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut t) } == 0 {
            return Stamp(t.tv_sec, t.tv_nsec);
        }
        // Without the coarse clock: a second earlier than the fine one,
        // more than any tick (what changed just before counts too).
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Stamp(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX) - 1,
            i64::from(d.subsec_nanos()),
        )
    }

    /// (seconds, nanoseconds), as the journal keeps it.
    pub fn parts(self) -> (i64, i64) {
        (self.0, self.1)
    }

    pub fn from_parts((s, n): (i64, i64)) -> Stamp {
        Stamp(s, n)
    }

    fn of(st: &libc::stat) -> Stamp {
        Stamp(st.st_ctime, st.st_ctime_nsec)
    }
}

/// What the sweep did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// (path, where it went): moved aside.
    pub moved: Vec<(String, String)>,
    /// (path, error): changed, but it could not be moved.
    pub failed: Vec<(String, String)>,
    /// Places left unswept (each with what lies below it): when the
    /// directory budget ran out, or past another bound (indexes,
    /// submodule entries, directories below a `modules`), or not
    /// listable; 0 when the sweep went everywhere.
    pub unswept: usize,
    /// The walk's directory budget ran out.
    pub stopped: bool,
    /// (index file, why): not read for its submodule entries.
    pub unread: Vec<(String, String)>,
    /// (config, why): the reason a config moved (or was to move) aside;
    /// a config whose keys are all inert stays, and is not here.
    pub why: Vec<(String, String)>,
    /// Git directories looked in already (each once per sweep, however
    /// many `.git` files and entries lead to it).
    looked: HashSet<(usize, Vec<u8>, bool)>,
}

/// Where the sweep looks, and what it leaves to the identity check.
pub struct Sweep<'a> {
    pub tops: &'a Tops,
    /// Paths whose identity was recorded at launch: the identity check
    /// decides whether they changed, not their ctime.
    pub recorded: &'a HashSet<String>,
    pub since: Stamp,
    /// The writable trees' tops: a gitdir file is followed only into
    /// them.
    pub writable: &'a [String],
    /// The git directories there at launch ([`known_at_launch`]); `None`
    /// where that search did not finish (or an older entry has none).
    pub known: Option<&'a HashSet<Identity>>,
}

impl Sweep<'_> {
    /// `g` beneath top `top` (a git directory, or a `.git`) was not there
    /// at launch, where the launch search went everywhere the sweep goes.
    fn unknown(&self, top: usize, g: &[u8]) -> bool {
        self.known
            .is_some_and(|k| identity(self.tops.get(top), g).is_some_and(|id| !k.contains(&id)))
    }
}

/// One directory to look at: a top and a path beneath it.
type At = (usize, Vec<u8>);

/// Look through each of `starts` to `depth` directories below it (at
/// most `budget` directories listed in all, never through a symlink nor
/// out of its top) for git directories (`.git`, or one holding `HEAD`,
/// `objects` and `refs`) and `.git` files or links, and move aside each
/// part changed during the run.
pub fn sweep(s: &Sweep, starts: &[String], depth: usize, budget: usize) -> Swept {
    let mut out = Swept::default();
    // Worktrees below the tops (a `.git` directory, or a file naming one
    // beneath a top): their indexes are read for submodule entries too.
    let mut repos: Vec<(At, usize)> = Vec::new();
    let unswept = walk(
        s.tops,
        starts,
        depth,
        &mut Budget::new(budget, None),
        &mut |(top, dir), level, met| match met {
            Met::DotGit => {
                if level > 0 && git_dir_of(s, top, dir).is_some() {
                    if repos.len() < MAX_INDEXES {
                        repos.push(((top, dir.to_vec()), level));
                    } else {
                        // Its index is not read: said, as when the budget runs out.
                        out.unswept += 1;
                    }
                }
                dot_git(s, top, dir, &mut out, Look::ByLaunch);
            }
            Met::Bare => look_in(s, top, dir, &mut out, Look::ByLaunch),
        },
    );
    out.unswept += unswept.0;
    out.stopped = unswept.1;
    // `git status` at a top recurses into every submodule its index
    // names, at any depth, and on into the submodules each of those
    // names in its own index (`.git/modules/NAME/index`): those
    // repositories are looked at wherever they are, beneath the same
    // top. The same for the repositories the walk found below the tops
    // (`cd lib && git status`).
    let mut work: Vec<(At, usize)> = starts
        .iter()
        .filter_map(|t| s.tops.reach(t))
        .map(|at| (at, 0))
        .chain(repos)
        .collect();
    let most = work.len() + MAX_INDEXES;
    // Their linked worktrees (`git worktree add`): each has its index in
    // `.git/worktrees/NAME`, whatever the command can reach of the
    // worktree itself.
    let mut outside = Vec::new();
    for ((top, dir), _) in work.clone() {
        let Some((gt, g)) = git_dir_of(s, top, &dir) else {
            continue;
        };
        for (wg, worktree) in linked_worktrees(s, gt, &g) {
            match worktree {
                // Nothing beneath it was walked: every entry counts as
                // deep.
                Some(at) if work.len() < most => work.push((at, depth + 1)),
                Some(_) => out.unswept += 1,
                None => outside.push((gt, wg)),
            }
        }
    }
    let mut read: HashSet<(usize, Vec<u8>, usize, Vec<u8>)> = HashSet::new();
    let mut links_left = MAX_LINKS;
    let mut bytes_left = MAX_INDEX_BYTES;
    let mut next = 0;
    while let Some(((top, dir), level)) = work.get(next).cloned() {
        next += 1;
        let Some((gt, g)) = git_dir_of(s, top, &dir) else {
            continue;
        };
        // Each index once per worktree: git reads one index for each
        // worktree whose `.git` names its git directory, with the entries
        // relative to that worktree.
        if !read.insert((gt, g.clone(), top, dir.clone())) {
            continue;
        }
        let t = s.tops.get(top);
        let index = s.tops.get(gt).show(&join(&g, b"index"));
        let (links, changed) = index_links(s, s.tops.get(gt), &g, &mut out, &mut bytes_left);
        // The index is the command's to write: a path is looked at as
        // git would reach it (empty and `.` components dropped), never
        // through a symlink nor out of the top (`..`, a `.git` inside).
        for rel in links.iter() {
            let Some(rel) = plain(rel) else {
                out.unread.push((
                    index.clone(),
                    format!(
                        "names a submodule at {:?}, which leaves the top",
                        String::from_utf8_lossy(rel)
                    ),
                ));
                continue;
            };
            if links_left == 0 {
                out.unswept += 1;
                continue;
            }
            links_left -= 1;
            let at = join(&dir, &rel);
            let deep = level + components(&rel);
            // Deeper than the walk goes (from where the walk started), a
            // repository was never looked at after the run that made
            // it: an entry added later (git add, in another run) leads
            // git to what it planted then. So where this run changed the
            // index, what would run there moves aside whatever its age.
            // Otherwise the launch record says which git directories
            // were there: deeper than the walk too, where a repository
            // planted deep in one run could be moved to an entry added
            // in another (its files keep their ctimes).
            let look = if changed && deep > depth {
                Look::Strict
            } else if deep > depth {
                Look::Deep
            } else {
                Look::ByLaunch
            };
            // What the walk moved already is no longer there.
            dot_git(s, top, &at, &mut out, look);
            // What is left of it: its own index is read in turn.
            if t.lstat(&join(&at, b".git")).is_ok() {
                if work.len() < most {
                    work.push(((top, at), deep));
                } else {
                    // Its index is not read: said, as when the budget runs out.
                    out.unswept += 1;
                }
            }
        }
    }
    // A worktree out of the command's reach: an entry there leads to
    // what the command could plant only by leaving it (`../ws/x`), which
    // git never writes into an index but follows when it reads one.
    for (gt, wg) in outside {
        let t = s.tops.get(gt);
        let (links, changed) = index_links(s, t, &wg, &mut out, &mut bytes_left);
        if let Some(rel) = links.iter().find(|rel| plain(rel).is_none()) {
            let index = join(&wg, b"index");
            let names = format!(
                "names a submodule at {:?}, which leaves its worktree",
                String::from_utf8_lossy(rel)
            );
            if changed {
                out.why.push((t.show(&index), format!("it {names}")));
                move_aside(t, &index, &mut out);
            } else {
                out.unread.push((t.show(&index), names));
            }
        }
    }
    out
}

/// Directories a walk may list: a count, and for the launch record a
/// moment past which it gives up (it holds the journal's walk lock,
/// which finished runs wait for: `journal::WALK_TIME`).
pub struct Budget {
    left: usize,
    until: Option<std::time::Instant>,
}

impl Budget {
    pub fn new(left: usize, until: Option<std::time::Instant>) -> Budget {
        Budget { left, until }
    }

    /// One more directory, if the budget allows it.
    fn spend(&mut self) -> bool {
        if self.left == 0 || self.until.is_some_and(|u| std::time::Instant::now() >= u) {
            return false;
        }
        self.left -= 1;
        true
    }
}

/// Told of each directory the walk meets: (top, the path beneath it),
/// its level below the start, and what it holds.
type Meet<'a> = dyn FnMut((usize, &[u8]), usize, Met) + 'a;

/// What the walk meets in a directory.
enum Met {
    /// It holds a `.git` (of any kind).
    DotGit,
    /// It holds `HEAD`, `objects` and `refs`: git takes it for a git
    /// directory (a bare repository, or a gitdir kept outside its
    /// worktree).
    Bare,
}

/// Each of `starts` and the directories below it to `depth` (at most
/// `budget` listed in all, depth first in name order, never through a
/// symlink nor out of its top, never into a `.git`), with what `meet`
/// is told of each. The launch record and the sweep both walk here, so
/// that they look at the same places. Returns how many directories were
/// left unlooked (each with what lies below it): the budget ran out, or
/// one could not be listed.
fn walk(
    tops: &Tops,
    starts: &[String],
    depth: usize,
    budget: &mut Budget,
    meet: &mut Meet,
) -> (usize, bool) {
    let mut unswept = 0;
    let mut todo: Vec<(At, usize)> = starts
        .iter()
        .rev()
        .filter_map(|t| tops.reach(t))
        .map(|at| (at, 0))
        .collect();
    while let Some(((top, dir), level)) = todo.pop() {
        if !budget.spend() {
            return (unswept + todo.len() + 1, true);
        }
        let t = tops.get(top);
        // What a listing would show of `dir` itself, by lookups.
        let looked_up = |meet: &mut Meet| {
            if t.lstat(&join(&dir, b".git")).is_ok() {
                meet((top, &dir), level, Met::DotGit);
            }
            if repository(t, &dir) {
                meet((top, &dir), level, Met::Bare);
            }
        };
        if level == depth {
            // Nothing below is searched: the lookups say what a listing
            // would (most directories searched are at this level).
            looked_up(meet);
            continue;
        }
        let names = match t.list_opening_up(&dir) {
            Ok(names) => names,
            // A mount point: another file system, which no walk crosses
            // (nor its sweep), as before `d_type` said what a name is.
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => continue,
            Err(_) => {
                // Not listable even so (another user's): the lookups, and
                // what lies below counted as unlooked, so that the run
                // says so.
                looked_up(meet);
                unswept += 1;
                continue;
            }
        };
        let mut subdirs = Vec::new();
        let (mut head, mut objects, mut refs, mut common) = (false, false, false, false);
        for (name, d_type) in names {
            let p = join(&dir, &name);
            let Some(kind) = kind_of(t, &p, d_type) else {
                continue;
            };
            match name.as_slice() {
                b".git" => meet((top, &dir), level, Met::DotGit),
                b"HEAD" => head = true,
                b"objects" => objects = true,
                b"refs" => refs = true,
                _ => {
                    common |= name == b"commondir";
                    if kind == libc::S_IFDIR {
                        subdirs.push(p);
                    }
                }
            }
        }
        if git_dir_names(head, objects, refs, common) {
            meet((top, &dir), level, Met::Bare);
        }
        todo.extend(subdirs.into_iter().rev().map(|d| ((top, d), level + 1)));
    }
    (unswept, false)
}

/// A directory's identity (device, inode).
pub type Identity = (libc::dev_t, libc::ino_t);

fn identity(t: &Top, rel: &[u8]) -> Option<Identity> {
    t.lstat(rel).ok().map(|(_, st)| (st.st_dev, st.st_ino))
}

/// At launch, before the command starts: the identities of the git
/// directories the sweep would look in, found as it will find them
/// (from the same starts, to the same depth and budget), each with the
/// directories below its `modules`. After the run, a git directory that
/// is not one of them was made, or moved into place, during the run:
/// it gets the strict look, whatever the age of its files (a directory
/// assembled from files older than the run and renamed into place as
/// `.git` keeps their ctimes). Each with where it was. `None` when some
/// directory was left unlooked: the sweep then decides by ctimes alone,
/// and says so.
pub fn known_at_launch(
    s: &Sweep,
    starts: &[String],
    depth: usize,
    budget: usize,
    until: std::time::Instant,
) -> Option<Vec<(Identity, String)>> {
    let mut known = Vec::new();
    // Each git directory once, however many `.git` files name it, and
    // one budget for what lies below them all: this is on the way to
    // the command.
    let mut seen: HashSet<(usize, Vec<u8>)> = HashSet::new();
    let mut below = Budget::new(LAUNCH_MODULES_BUDGET, Some(until));
    let mut unlooked = 0;
    let mut dirs = Budget::new(budget, Some(until));
    let walked = walk(
        s.tops,
        starts,
        depth,
        &mut dirs,
        &mut |(top, dir), _, met| {
            let g = match met {
                Met::DotGit => {
                    let dot = join(dir, b".git");
                    let g = git_dir_of(s, top, dir);
                    // The `.git` itself where it is a gitdir file or a
                    // link (a directory is its own git directory, noted
                    // below).
                    if g.as_ref() != Some(&(top, dot.clone())) {
                        let t = s.tops.get(top);
                        known.extend(identity(t, &dot).map(|i| (i, t.show(&dot))));
                    }
                    g
                }
                Met::Bare => Some((top, dir.to_vec())),
            };
            let Some((gt, g)) = g else { return };
            if !seen.insert((gt, g.clone())) {
                return;
            }
            let t = s.tops.get(gt);
            let mut note = |c: &[u8]| known.extend(identity(t, c).map(|i| (i, t.show(c))));
            note(&g);
            unlooked += modules_of(t, &g, &mut below, &mut note);
            // Linked worktrees' git directories, and their submodules'.
            for wg in worktrees_of(t, &g) {
                note(&wg);
                unlooked += modules_of(t, &wg, &mut below, &mut note);
            }
        },
    );
    (walked.0 + unlooked == 0).then_some(known)
}

/// The git directories of git directory `g`'s linked worktrees
/// (`g/worktrees/NAME`).
fn worktrees_of(t: &Top, g: &[u8]) -> Vec<Vec<u8>> {
    let base = join(g, b"worktrees");
    let Ok(names) = t.list_typed(&base) else {
        return Vec::new();
    };
    names
        .into_iter()
        .map(|(n, d_type)| (join(&base, &n), d_type))
        .filter(|(p, d_type)| kind_of(t, p, *d_type) == Some(libc::S_IFDIR))
        .map(|(p, _)| p)
        .collect()
}

/// At most this many bytes of index files are read after a run, in all.
const MAX_INDEX_BYTES: u64 = 256 << 20;

/// At most this many submodule entries are followed after a run, in
/// all the indexes read; the rest count as unswept.
const MAX_LINKS: usize = 10_000;

/// At most this many repositories' indexes are read after a run.
const MAX_INDEXES: usize = 100;

/// The submodule entries of the index in git directory `g` beneath `t`,
/// and of the shared index its `link` extension names (`git
/// update-index --split-index` keeps the entries in `g/sharedindex.HEX`),
/// and whether one of them changed during the run. What cannot be read
/// or parsed is said.
fn index_links(
    s: &Sweep,
    t: &Top,
    g: &[u8],
    out: &mut Swept,
    bytes_left: &mut u64,
) -> (Vec<Vec<u8>>, bool) {
    let mut next = Some(join(g, b"index"));
    let mut links = Vec::new();
    let mut changed = false;
    // The index, then its shared index (which names none itself).
    for _ in 0..2 {
        let Some(path) = next.take() else { break };
        let Ok((_, st)) = t.lstat(&path) else {
            // No index (a fresh repository), or the shared one gone.
            break;
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            // git writes an index by renaming a regular file into place:
            // anything else was put there, and git would follow a link
            // to entries that were never read.
            out.why.push((
                t.show(&path),
                "it is not a regular file, and git would follow it to entries sbx did not read"
                    .into(),
            ));
            move_aside(t, &path, out);
            break;
        }
        changed |= Stamp::of(&st) >= s.since;
        // What a read takes of the bound (one too large stops early).
        let size = u64::try_from(st.st_size)
            .unwrap_or(u64::MAX)
            .min(MAX_INDEX + 1);
        if size > *bytes_left {
            out.unread.push((
                t.show(&path),
                format!(
                    "was not read: the sweep had read {} MiB of indexes already",
                    MAX_INDEX_BYTES >> 20
                ),
            ));
            break;
        }
        *bytes_left -= size;
        match t.read(&path, MAX_INDEX) {
            Ok(Some(b)) => match gitlinks_checked(&b) {
                Some(i) => {
                    links.extend(i.links);
                    next = i
                        .shared
                        .map(|h| join(g, format!("sharedindex.{h}").as_bytes()));
                }
                None => out.unread.push((
                    t.show(&path),
                    "cannot be read as a git index, so its submodules were not looked at".into(),
                )),
            },
            Ok(None) => out.unread.push((
                t.show(&path),
                format!("is larger than {} MiB and was not read", MAX_INDEX >> 20),
            )),
            // Gone since the lstat: nothing to follow.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => out.unread.push((
                t.show(&path),
                format!("could not be read ({e}), so its submodules were not looked at"),
            )),
        }
    }
    links.sort();
    links.dedup();
    (links, changed)
}

/// The number of components of a path [`plain`] gave.
fn components(rel: &[u8]) -> usize {
    rel.split(|&b| b == b'/').count()
}

/// What git may take for a git directory, of any type each (git takes a
/// `HEAD` link, and `objects` and `refs` through links; a `commondir`
/// names where those two are): see [`git_dir_names`].
fn repository(t: &Top, dir: &[u8]) -> bool {
    let has = |name: &[u8]| t.lstat(&join(dir, name)).is_ok();
    git_dir_names(
        has(b"HEAD"),
        has(b"objects"),
        has(b"refs"),
        has(b"commondir"),
    )
}

/// Whether a directory holding these names may be a git directory to git
/// (`is_git_directory`: a `HEAD`, and `objects` and `refs` here or in
/// the directory its `commondir` names). A wider test than git's: a
/// directory that is not one only gets looked in.
fn git_dir_names(head: bool, objects: bool, refs: bool, commondir: bool) -> bool {
    head && ((objects && refs) || commondir)
}

/// The type (`S_IFMT` bits) of `rel` beneath `t`, listed with `d_type`:
/// from the listing where the file system gives it, else by `lstat`
/// (`None`: gone).
fn kind_of(t: &Top, rel: &[u8], d_type: u8) -> Option<u32> {
    Some(match d_type {
        libc::DT_DIR => libc::S_IFDIR,
        libc::DT_REG => libc::S_IFREG,
        libc::DT_LNK => libc::S_IFLNK,
        libc::DT_FIFO => libc::S_IFIFO,
        libc::DT_SOCK => libc::S_IFSOCK,
        libc::DT_CHR => libc::S_IFCHR,
        libc::DT_BLK => libc::S_IFBLK,
        _ => return t.lstat(rel).ok().map(|(_, st)| st.st_mode & libc::S_IFMT),
    })
}

/// `rel` beneath `t` is of type `kind` (`S_IFMT` bits), not followed.
fn is(t: &Top, rel: &[u8], kind: u32) -> bool {
    t.lstat(rel)
        .is_ok_and(|(_, st)| st.st_mode & libc::S_IFMT == kind)
}

/// `rel` as git's `lstat` reaches it from the worktree: empty and `.`
/// components dropped. `None` for a path that leaves the worktree or
/// goes through a `.git` (`..`, `/etc`, `.git/x`), or names nothing.
fn plain(rel: &[u8]) -> Option<Vec<u8>> {
    if rel.starts_with(b"/") {
        return None;
    }
    let mut out: Vec<u8> = Vec::new();
    for c in rel.split(|&b| b == b'/') {
        match c {
            b"" | b"." => continue,
            b".." => return None,
            _ if c.eq_ignore_ascii_case(b".git") => return None,
            _ => {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(c);
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A larger index is not read (its submodule entries are not looked at,
/// and the run says so).
const MAX_INDEX: u64 = 64 << 20;

/// A `.git` file larger than this is no gitdir file git writes.
const MAX_GITFILE: u64 = 64 << 10;

/// The `.git` in worktree `dir`: a git directory, or a gitdir file (moved
/// aside if it changed, else the git directory it names is looked in
/// when it lies beneath a top), or a link (moved aside if it changed;
/// never followed).
/// `look`: how what changed is told ([`Look`]).
fn dot_git(s: &Sweep, top: usize, dir: &[u8], out: &mut Swept, look: Look) {
    let t = s.tops.get(top);
    let g = join(dir, b".git");
    let Ok((_, st)) = t.lstat(&g) else {
        return;
    };
    // A `.git` link or unreadable file that was not there at launch (one
    // whose directory was renamed into place) leads where no sweep
    // looked. A gitdir file leads to a git directory, which is judged by
    // its own identity ([`look_in`]).
    let strict = look != Look::Deep && look.judge(s, top, &g).strict;
    let kind = st.st_mode & libc::S_IFMT;
    if kind == libc::S_IFDIR {
        look_in(s, top, &g, out, look);
    } else if changed(s, t, &g, &st) || (strict && kind != libc::S_IFREG) {
        // Strict: git follows a `.git` link to what no sweep looked at.
        move_aside(t, &g, out);
    } else if kind == libc::S_IFREG {
        match named_gitdir(s, top, dir) {
            Some((i, rel)) => look_in(s, i, &rel, out, look),
            // Strict: git would follow a symlink on the way, or leave the
            // tops, to what no sweep looks at: the `.git` file goes.
            None if strict => move_aside(t, &g, out),
            None => {}
        }
    }
}

/// The git directory of worktree `dir`: its `.git` directory, or the one
/// its `.git` file names where [`named_gitdir`] takes it; `None` for a
/// link or anything else.
fn git_dir_of(s: &Sweep, top: usize, dir: &[u8]) -> Option<(usize, Vec<u8>)> {
    let g = join(dir, b".git");
    let (_, st) = s.tops.get(top).lstat(&g).ok()?;
    match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => Some((top, g)),
        libc::S_IFREG => named_gitdir(s, top, dir),
        _ => None,
    }
}

/// The directory the gitdir file `dir/.git` names, read as git reads it
/// (the file starts with `gitdir: `; only line ends are cut from the
/// rest), relative to the worktree or absolute: either way only where
/// the kernel would find it with no symlink on the way (so `..` is what
/// the kernel would make of it), and only in a writable tree (where the
/// command could have made or changed it: a top above one is not).
fn named_gitdir(s: &Sweep, top: usize, dir: &[u8]) -> Option<(usize, Vec<u8>)> {
    let text = s
        .tops
        .get(top)
        .read(&join(dir, b".git"), MAX_GITFILE)
        .ok()??;
    let d = without_line_end(text.strip_prefix(b"gitdir: ")?);
    if d.is_empty() {
        return None;
    }
    let (i, rel) = if d.starts_with(b"/") {
        s.tops.reach(std::str::from_utf8(d).ok()?)?
    } else {
        (top, join(dir, d))
    };
    writable_dir(s, i, &rel)
}

/// A path git wrote into a file, as git reads it back: only the line
/// ends (`\n`, `\r`) cut.
fn without_line_end(mut d: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = d {
        d = rest;
    }
    d
}

/// The directory `rel` beneath top `i`, walked as [`walked`] does, where
/// it lies in a writable tree; `None` otherwise.
fn writable_dir(s: &Sweep, i: usize, rel: &[u8]) -> Option<(usize, Vec<u8>)> {
    let t = s.tops.get(i);
    let rel = walked(t, rel)?;
    let shown = t.show(&rel);
    let writable = s.writable.iter().any(|w| crate::ir::path_within(&shown, w));
    (writable && is(t, &rel, libc::S_IFDIR)).then_some((i, rel))
}

/// The linked worktrees of git directory `g` beneath top `gt` that have
/// an index: each one's git directory (`g/worktrees/NAME`), and the
/// worktree where it lies in a writable tree (its `gitdir` file names
/// the worktree's `.git`), or `None` where it does not.
fn linked_worktrees(s: &Sweep, gt: usize, g: &[u8]) -> Vec<(Vec<u8>, Option<At>)> {
    let t = s.tops.get(gt);
    let mut out = Vec::new();
    for wg in worktrees_of(t, g) {
        if t.lstat(&join(&wg, b"index")).is_err() {
            continue;
        }
        let worktree = t
            .read(&join(&wg, b"gitdir"), MAX_GITFILE)
            .ok()
            .flatten()
            .and_then(|text| {
                let wt = std::str::from_utf8(without_line_end(&text))
                    .ok()?
                    .strip_suffix("/.git")?;
                let (i, rel) = s.tops.reach(wt)?;
                writable_dir(s, i, &rel)
            });
        out.push((wg, worktree));
    }
    out
}

/// `rel` beneath `t` with `.` and `..` taken out, where each directory a
/// `..` leaves is a directory (not a symlink, whose `..` the kernel
/// takes from its target); `None` where one is not, or where it climbs
/// above the top.
fn walked(t: &Top, rel: &[u8]) -> Option<Vec<u8>> {
    let mut parts: Vec<&[u8]> = Vec::new();
    for c in rel.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                if !is(t, &parts.join(&b'/'), libc::S_IFDIR) {
                    return None;
                }
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join(&b'/'))
}

/// The paths of the submodule entries (gitlinks) in a git index file
/// (versions 2 to 4, SHA-1 or SHA-256 object names); none where it
/// cannot be read as one.
#[cfg(test)]
pub fn gitlinks(index: &[u8]) -> Vec<Vec<u8>> {
    gitlinks_checked(index).map(|i| i.links).unwrap_or_default()
}

/// What the sweep takes from an index file.
struct Index {
    /// The submodule entries' paths.
    links: Vec<Vec<u8>>,
    /// A split index's shared index (`sharedindex.HEX`), by its name.
    shared: Option<String>,
}

/// [`gitlinks`], and the shared index named; `None` where the bytes
/// cannot be read as an index.
fn gitlinks_checked(index: &[u8]) -> Option<Index> {
    [20, 32]
        .into_iter()
        .find_map(|hash| parse_index(index, hash))
}

fn parse_index(b: &[u8], hash: usize) -> Option<Index> {
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    if b.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let entries = be32(8)?;
    let mut out = Vec::new();
    let mut pos = 12;
    let mut prev: Vec<u8> = Vec::new();
    for _ in 0..entries {
        let start = pos;
        let mode = be32(pos + 24)?;
        pos += 40 + hash;
        let flags = u16::from_be_bytes(b.get(pos..pos + 2)?.try_into().ok()?);
        pos += 2;
        if flags & 0x4000 != 0 {
            // Extended flags: version 3 and later only.
            if version < 3 {
                return None;
            }
            pos += 2;
        }
        // The name's length where it fits in the flags; git reads the
        // name by it, whatever NUL comes first, else up to the NUL. The
        // end of `n` bytes from `at`, or of what lies before a NUL.
        let len = usize::from(flags & 0xfff);
        let name_end = |at: usize, n: usize| -> Option<usize> {
            if len < 0xfff {
                b.get(at..at + n)?;
                Some(at + n)
            } else {
                Some(at + b.get(at..)?.iter().position(|&x| x == 0)?)
            }
        };
        let path = if version == 4 {
            // The length to drop from the previous path (git's offset
            // varint), then the rest of this one.
            let mut c = *b.get(pos)?;
            pos += 1;
            let mut strip = usize::from(c & 127);
            while c & 128 != 0 {
                c = *b.get(pos)?;
                pos += 1;
                strip = strip.checked_add(1)?.checked_mul(128)? + usize::from(c & 127);
            }
            let mut p = prev.get(..prev.len().checked_sub(strip)?)?.to_vec();
            // Where the flags give the length, it is the whole name's.
            let rest = if len < 0xfff {
                len.checked_sub(p.len())?
            } else {
                0
            };
            let end = name_end(pos, rest)?;
            p.extend_from_slice(&b[pos..end]);
            pos = end + 1;
            p
        } else {
            let end = name_end(pos, len)?;
            let p = b[pos..end].to_vec();
            // NUL-padded to a multiple of eight bytes.
            pos = start + ((end - start + 8) & !7);
            p
        };
        // As bytes: one name that is not UTF-8 must not hide the
        // others. Up to a NUL inside it, as git's lstat and chdir take it.
        // git's S_ISGITLINK: the type bits alone, whatever else is set.
        if mode & 0o170000 == 0o160000 {
            let cut = path.iter().position(|&x| x == 0).unwrap_or(path.len());
            out.push(path[..cut].to_vec());
        }
        prev = path;
    }
    // The extensions, up to the trailing checksum: `link` names the
    // shared index of a split one (its object name, in hex).
    // They must end exactly at the checksum, or the bytes were read with
    // the wrong hash length (or out of step with git): not an index.
    let mut shared = None;
    let end = b.len().checked_sub(hash)?;
    while pos < end {
        let size = usize::try_from(be32(pos + 4)?).ok()?;
        let next = pos.checked_add(8)?.checked_add(size)?;
        if next > end {
            return None;
        }
        if &b[pos..pos + 4] == b"link" {
            let name = b.get(pos + 8..pos + 8 + hash)?;
            shared = Some(name.iter().map(|x| format!("{x:02x}")).collect::<String>());
        }
        pos = next;
    }
    if pos != end {
        return None;
    }
    Some(Index { links: out, shared })
}

/// Whether `rel` changed during the run: by identity when it was
/// recorded at launch (the identity check has moved it aside then), by
/// ctime otherwise.
fn changed(s: &Sweep, t: &Top, rel: &[u8], st: &libc::stat) -> bool {
    !s.recorded.contains(&t.show(rel)) && Stamp::of(st) >= s.since
}

/// How a git directory's parts are told to have changed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    /// Whatever their age, where something would run ([`parts_in`]).
    Strict,
    /// Strict for a git directory that was not there at launch
    /// ([`known_at_launch`]), by ctimes for one that was (and for all
    /// where the launch record is missing).
    ByLaunch,
    /// As [`Look::ByLaunch`], reached through an entry deeper than the
    /// walk, where the launch record never holds the `.git` itself (a
    /// submodule's gitdir file): that is judged by its ctime.
    Deep,
}

/// How the parts of one git directory (or one `.git`) are judged.
#[derive(Clone, Copy)]
struct Judged {
    /// Whatever their age, where something would run ([`parts_in`]).
    strict: bool,
    /// Not there at launch as far as the launch record says: its parts
    /// recorded at launch were never looked at by a sweep either (put
    /// there by another run's command going at the time), so they are
    /// judged like the rest.
    unvetted: bool,
}

impl Look {
    fn judge(self, s: &Sweep, top: usize, g: &[u8]) -> Judged {
        let unvetted = s.unknown(top, g);
        // (Only `dot_git` tells a `Deep` `.git` apart.)
        Judged {
            strict: self == Look::Strict || unvetted,
            unvetted,
        }
    }
}

/// The parts of git directory `g` changed during the run (`look`:
/// [`Look`]), its submodules' too.
fn look_in(s: &Sweep, top: usize, g: &[u8], out: &mut Swept, look: Look) {
    let judged = look.judge(s, top, g);
    if !out.looked.insert((top, g.to_vec(), judged.strict)) {
        return;
    }
    parts_in(s, top, g, out, judged);
    // Below a strict one, strict too; else each directory by its own
    // identity.
    let look = if judged.strict { Look::Strict } else { look };
    modules_in(s, top, g, out, look);
    // Its linked worktrees' git directories (`worktrees/NAME`), which
    // the launch record holds too: a gitdir file may name one, and a
    // `commondir` there names where git finds the config. Each is a git
    // directory like any other, and looked in once.
    for wg in worktrees_of(s.tops.get(top), g) {
        look_in(s, top, &wg, out, look);
    }
}

/// How deep below a git directory's `modules`, and how many directories
/// listed there at most, submodules' git directories are looked for;
/// at launch, how many in all (each git directory looked in once).
const MODULES_DEPTH: usize = 12;
const MODULES_BUDGET: usize = 1000;
const LAUNCH_MODULES_BUDGET: usize = 4 * MODULES_BUDGET;

/// The submodules' git directories below `g/modules`, at any depth the
/// bounds allow: a submodule's is named by its path (`modules/a/b/c`),
/// a nested one's lies in its parent's `modules`. Each is looked in: the
/// index names only the submodules it still holds, and a split index
/// keeps them in another file.
fn modules_in(s: &Sweep, top: usize, g: &[u8], out: &mut Swept, look: Look) {
    let mut found = Vec::new();
    let mut left = Budget::new(MODULES_BUDGET, None);
    out.unswept += modules_of(s.tops.get(top), g, &mut left, &mut |c| {
        found.push(c.to_vec())
    });
    for c in found {
        parts_in(s, top, &c, out, look.judge(s, top, &c));
    }
}

/// Every directory below git directory `g`'s `modules` that the bounds
/// allow (a submodule's git directory, or one on the way to one; at
/// most `left` listed, counted down), in a fixed order, each told to
/// `each` before what lies below it is listed; returns how many were
/// left unlooked (with what lies below them). Absent `modules` is
/// nothing to look at.
fn modules_of(t: &Top, g: &[u8], left: &mut Budget, each: &mut dyn FnMut(&[u8])) -> usize {
    let mut unlooked = 0;
    let mut todo = vec![(join(g, b"modules"), 0)];
    while let Some((d, level)) = todo.pop() {
        // Absent `modules` (the most common) costs nothing of the budget.
        if level == 0 && t.lstat(&d).is_err() {
            continue;
        }
        if !left.spend() {
            unlooked += todo.len() + 1;
            break;
        }
        let names = match t.list_opening_up(&d) {
            Ok(n) => n,
            Err(e) => {
                // Absent, a file where git looks for a directory (git
                // takes nothing there either) or another file system is
                // nothing to look at; anything else is said.
                if e.kind() != std::io::ErrorKind::NotFound
                    && e.raw_os_error() != Some(libc::ENOTDIR)
                    && e.raw_os_error() != Some(libc::EXDEV)
                {
                    unlooked += 1;
                }
                continue;
            }
        };
        for (name, d_type) in names {
            let c = join(&d, &name);
            if kind_of(t, &c, d_type) != Some(libc::S_IFDIR) {
                continue;
            }
            if level + 1 > MODULES_DEPTH {
                // Not looked in: said, as when the budget runs out.
                unlooked += 1;
                continue;
            }
            each(&c);
            let below = if repository(t, &c) {
                join(&c, b"modules")
            } else {
                c
            };
            todo.push((below, level + 1));
        }
    }
    unlooked
}

/// The parts of git directory `g` ([`PARTS`]) changed during the run,
/// moved aside. `strict`: whatever their age, where something would run
/// (hooks other than `*.sample`, a config with a key that is not inert,
/// a `commondir`), for a repository no earlier run's sweep looked at.
fn parts_in(s: &Sweep, top: usize, g: &[u8], out: &mut Swept, judged: Judged) {
    let strict = judged.strict;
    let t = s.tops.get(top);
    for part in PARTS {
        let p = join(g, part.as_bytes());
        let Ok((_, st)) = t.lstat(&p) else {
            continue;
        };
        let dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let moves = if s.recorded.contains(&t.show(&p)) && !judged.unvetted {
            false
        } else if strict && part == "hooks" && dir {
            has_hooks(t, &p)
        } else if strict {
            true
        } else if part == "hooks" && dir {
            hooks_changed(s, t, &p, &st)
        } else {
            Stamp::of(&st) >= s.since
        };
        if moves {
            // A config of inert keys (a clone's remote, `user.name`)
            // runs nothing later: it stays.
            if part == "config" || (strict && part == "config.worktree") {
                match config_unsafe(t, &p) {
                    None => continue,
                    Some(why) => out.why.push((t.show(&p), why)),
                }
            }
            move_aside(t, &p, out);
        }
    }
}

/// A hooks directory counts as changed when a hook in it did (one
/// rewritten in place changes only its own ctime), or when it did and
/// holds any hook (a directory of old scripts renamed into place). git
/// runs a hook only by its exact name, never a `*.sample` (what `git
/// init` puts there): those alone change nothing. It moves whole.
fn hooks_changed(s: &Sweep, t: &Top, p: &[u8], st: &libc::stat) -> bool {
    let Ok(names) = t.list(p) else {
        return Stamp::of(st) >= s.since;
    };
    let mut any = false;
    for name in names {
        if name.ends_with(b".sample") {
            continue;
        }
        any = true;
        if t.lstat(&join(p, &name))
            .is_ok_and(|(_, h)| Stamp::of(&h) >= s.since)
        {
            return true;
        }
    }
    any && Stamp::of(st) >= s.since
}

/// Whether the hooks directory `p` holds a hook git would run (any name
/// but `*.sample`; one that cannot be listed counts).
fn has_hooks(t: &Top, p: &[u8]) -> bool {
    t.list(p)
        .map_or(true, |names| names.iter().any(|n| !n.ends_with(b".sample")))
}

/// Why the git config at `rel` cannot stay (its keys, or that it cannot
/// be read as one: too large, not a regular file, a symlink); `None`
/// when every key in it is inert (`lower::git::inert`).
pub fn config_unsafe(t: &Top, rel: &[u8]) -> Option<String> {
    use crate::lower::git::{inert, MAX_FILE};
    match t.read(rel, MAX_FILE) {
        Ok(Some(bytes)) => inert::check(&bytes).why(),
        Ok(None) => Some(format!("it is larger than {} KiB", MAX_FILE >> 10)),
        Err(e) => Some(format!("it cannot be read as a file ({e})")),
    }
}

/// Said of hooks made during the run: `git init` copies the hooks of
/// the user's `init.templateDir`, which look no different from planted
/// ones.
pub const HOOKS_WHY: &str = " (hooks made during the run move aside even when `git init` copied \
                             them from your init.templateDir: sbx cannot tell those from \
                             hooks the command wrote)";

fn move_aside(t: &Top, p: &[u8], out: &mut Swept) {
    match t.move_aside(p) {
        Ok(Some(to)) => out.moved.push((t.show(p), to)),
        Ok(None) => {}
        Err(e) if t.lock_out(p).is_ok() => out.failed.push((
            t.show(p),
            format!(
                "{e}; its mode set to 000 instead, which stops its owner's git unless that is root"
            ),
        )),
        Err(e) => out.failed.push((t.show(p), e.to_string())),
    }
}

/// One warning per path moved or not movable, per index not read, and
/// one when the directory budget ran out (on every run: what the search
/// did not reach can hold a planted config).
pub fn report(s: &Swept, budget: usize, warnings: &mut Vec<String>) {
    // Why a path moves, beyond "it changed": a config's keys, hooks'
    // possible origin.
    let why = |p: &str| match s.why.iter().find(|(c, _)| c == p) {
        Some((_, w)) => format!(" ({w})"),
        None if p.ends_with("/hooks") => HOOKS_WHY.to_string(),
        None => String::new(),
    };
    for (p, to) in &s.moved {
        warnings.push(format!(
            "sbx: warning: the command created or changed {p}, in a git repository below \
             a writable tree's top (git would run it outside the sandbox later){}: moved it \
             to {to}. Review it, then rename it back",
            why(p)
        ));
    }
    for (p, e) in &s.failed {
        warnings.push(format!(
            "sbx: warning: the command created or changed {p}, in a git repository below \
             a writable tree's top{}, and it could not be moved aside ({e}): review it before \
             running git there",
            why(p)
        ));
    }
    for (p, why) in &s.unread {
        warnings.push(format!(
            "sbx: warning: {p} {why}: review the submodules it names before running git there"
        ));
    }
    if s.stopped {
        warnings.push(format!(
            "sbx: warning: the search for git repositories changed during the run stopped \
             after {budget} directories, {} unswept (with what lies below them): review \
             repositories below the workspace before running git there",
            s.unswept
        ));
    } else if s.unswept > 0 {
        warnings.push(format!(
            "sbx: warning: the search for git repositories changed during the run left {} \
             places unswept (with what lies below them), past its bounds ({MAX_INDEXES} \
             indexes, {MAX_LINKS} submodule entries, {MODULES_BUDGET} directories below a \
             git directory's modules) or not listable: review repositories below the \
             workspace before running git there",
            s.unswept
        ));
    }
}

#[cfg(test)]
mod tests;
