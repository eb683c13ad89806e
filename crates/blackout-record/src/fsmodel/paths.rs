//! Paths: every lookup resolved inside the model (`..`, absolute paths and
//! symlinks followed in it, never on the real file system), and whether
//! it lies inside the directory under test.

use blackout_oplog::ops::{Ino, InodeKind, ROOT_INO};

use crate::syscall::AT_FDCWD;

use super::{FsModel, Loc, Resolved, Target, SYMLINK_FOLLOW_MAX};

impl FsModel {
    /// The path inside the directory under test that an absolute path names,
    /// as components, or `None` when it is outside.
    pub(super) fn inside<'p>(&self, abs: &'p [u8]) -> Option<&'p [u8]> {
        let rest = abs.strip_prefix(self.dir.as_slice())?;
        if rest.is_empty() || rest[0] == b'/' {
            Some(rest)
        } else {
            None
        }
    }

    /// Resolves `path` as process `pid` would, relative to `dirfd` (AT_FDCWD
    /// for the cwd). `follow` says whether a symlink in the last component is
    /// followed.
    pub(super) fn resolve(&self, pid: u32, dirfd: i64, path: &[u8], follow: bool) -> Resolved {
        if path.is_empty() {
            return Resolved::Missing;
        }
        let start = if path[0] == b'/' {
            Loc::Out(b"/".to_vec())
        } else if dirfd == AT_FDCWD {
            self.cwds[self.proc(pid).cwd].clone()
        } else {
            match self.ofd(pid, dirfd).map(|o| &o.target) {
                Some(Target::Inode(i)) => Loc::In(*i),
                Some(Target::Outside(p)) => Loc::Out(p.clone()),
                _ => return Resolved::Out(path.to_vec()),
            }
        };
        let mut budget = SYMLINK_FOLLOW_MAX;
        self.walk(start, path, follow, &mut budget)
    }

    pub(super) fn walk(&self, start: Loc, path: &[u8], follow: bool, budget: &mut u32) -> Resolved {
        let mut cur = match start {
            Loc::In(i) => i,
            Loc::Out(base) => {
                let abs = lexical_join(&base, path);
                return match self.inside(&abs) {
                    Some(rest) => {
                        let rest = rest.to_vec();
                        self.walk(Loc::In(ROOT_INO), &rest, follow, budget)
                    }
                    None => Resolved::Out(abs),
                };
            }
        };
        let comps: Vec<&[u8]> = path
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        for (k, comp) in comps.iter().enumerate() {
            let last = k + 1 == comps.len();
            match *comp {
                b"." => {}
                b".." => {
                    if cur == ROOT_INO {
                        // Leaves the directory under test: continue lexically
                        // from its parent.
                        let rest = joined(b"..", &comps[k + 1..]);
                        return self.walk(Loc::Out(self.dir.clone()), &rest, follow, budget);
                    }
                    cur = self.inodes[cur as usize].parent;
                }
                name => {
                    let node = &self.inodes[cur as usize];
                    if node.kind != InodeKind::Dir {
                        return Resolved::Missing;
                    }
                    let Some(c) = node.entries.get(name).copied() else {
                        if last {
                            return Resolved::In {
                                entry: Some((cur, name.to_vec())),
                                ino: None,
                            };
                        }
                        return Resolved::Missing;
                    };
                    if self.inodes[c as usize].kind == InodeKind::Symlink && (!last || follow) {
                        return self.through_symlink(cur, c, &comps[k + 1..], follow, budget);
                    }
                    if last {
                        return Resolved::In {
                            entry: Some((cur, name.to_vec())),
                            ino: Some(c),
                        };
                    }
                    cur = c;
                }
            }
        }
        Resolved::In {
            entry: None,
            ino: Some(cur),
        }
    }

    /// Continues a walk through the symlink `link` found in `dir`, with the
    /// components after it still to walk.
    pub(super) fn through_symlink(
        &self,
        dir: Ino,
        link: Ino,
        rest: &[&[u8]],
        follow: bool,
        budget: &mut u32,
    ) -> Resolved {
        if *budget == 0 {
            return Resolved::Missing;
        }
        *budget -= 1;
        let target = self.inodes[link as usize].data.to_vec();
        let rest = joined(&target, rest);
        let from = if target.first() == Some(&b'/') {
            Loc::Out(b"/".to_vec())
        } else {
            Loc::In(dir)
        };
        if rest.is_empty() {
            return Resolved::Missing;
        }
        self.walk(from, &rest, follow, budget)
    }
}

/// `head` followed by each of `rest`, `/`-separated.
pub(super) fn joined(head: &[u8], rest: &[&[u8]]) -> Vec<u8> {
    let mut out = head.to_vec();
    for c in rest {
        out.push(b'/');
        out.extend_from_slice(c);
    }
    out
}

pub(super) fn lexical_join(base: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    let whole: Vec<u8> = if rel.first() == Some(&b'/') {
        rel.to_vec()
    } else {
        let mut w = base.to_vec();
        w.push(b'/');
        w.extend_from_slice(rel);
        w
    };
    for c in whole.split(|&b| b == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = Vec::new();
    for p in parts {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    out
}
