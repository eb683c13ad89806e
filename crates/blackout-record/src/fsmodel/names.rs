//! Names: open and create, links, renames, unlinks and mknod: the calls
//! that change directory entries.

use blackout_oplog::ops::{Ino, InodeKind, Name, OpKind, ROOT_INO};

use crate::error::Fault;
use crate::syscall::{CallSite, Link, Open, Rename};

use super::{FsModel, Ofd, Resolved, Target, R};

impl FsModel {
    pub(super) fn open(&mut self, site: &CallSite<'_>, open: Open) -> R<()> {
        let pid = site.pid;
        let fl = open.flags;
        let path = open.path.as_slice();
        let sync = if fl.sync {
            Some(false)
        } else if fl.dsync {
            Some(true)
        } else {
            None
        };
        let mut ofd = Ofd {
            target: Target::Other,
            offset: 0,
            append: fl.append,
            sync,
            writable: fl.writable,
            name: path.to_vec(),
        };
        if fl.tmpfile {
            match self.resolve(pid, open.dirfd, path, true) {
                Resolved::In { ino: Some(d), .. } => {
                    let ino = self.new_inode(InodeKind::File, Vec::new(), d)?;
                    ofd.target = Target::Inode(ino);
                }
                Resolved::Out(_) => {
                    // New, so its bytes are all in the log: modelled, not
                    // entered anywhere, in case it is linked in.
                    self.stats.outside += 1;
                    let ino = self.new_inode(InodeKind::File, Vec::new(), ROOT_INO)?;
                    ofd.target = Target::Inode(ino);
                }
                _ => return Err(self.diverged(path, "O_TMPFILE open")),
            }
            self.install(pid, open.fd, ofd, fl.cloexec);
            return Ok(());
        }
        let follow = !(fl.nofollow || (fl.creat && fl.excl));
        let resolved = self.resolve(pid, open.dirfd, path, follow);
        let annotated = self.annotated_inode(open.fd_path.as_deref());
        let ino = match resolved {
            Resolved::In { ino: Some(i), .. } => {
                if let Some(Some(a)) = annotated {
                    if a != i {
                        return Err(Fault::divergence(format!(
                            "opened `{}`, which the model resolves to inode {i} but strace shows as inode {a}'s path",
                            String::from_utf8_lossy(path)
                        )));
                    }
                }
                // Linux truncates on O_TRUNC whatever the access mode: a
                // successful O_RDONLY|O_TRUNC open empties the file too.
                if fl.trunc
                    && self.inodes[i as usize].kind == InodeKind::File
                    && self.inodes[i as usize].size > 0
                {
                    self.truncate(site, i, 0, path)?;
                }
                i
            }
            Resolved::In {
                entry: Some((dir, name)),
                ino: None,
            } if fl.creat => self.link_new(site, dir, name, InodeKind::File, Vec::new(), path)?,
            Resolved::Out(p) => match annotated {
                // Reached the directory by a route the model cannot follow
                // (e.g. /proc/self/cwd or an outside symlink into it): the
                // recorded path of the fd is the truth.
                Some(Some(a)) => a,
                Some(None) => return Err(self.diverged(path, "open")),
                None => {
                    self.stats.outside += 1;
                    ofd.target =
                        self.outside_open(site, p, (fl.creat && fl.excl, fl.trunc), path)?;
                    self.install(pid, open.fd, ofd, fl.cloexec);
                    return Ok(());
                }
            },
            _ => return Err(self.diverged(path, "open")),
        };
        ofd.target = Target::Inode(ino);
        self.install(pid, open.fd, ofd, fl.cloexec);
        Ok(())
    }

    /// A new inode of `kind`, linked as `name` in `dir`.
    pub(super) fn link_new(
        &mut self,
        site: &CallSite<'_>,
        dir: Ino,
        name: Vec<u8>,
        kind: InodeKind,
        data: Vec<u8>,
        path: &[u8],
    ) -> R<Ino> {
        let ino = self.new_inode(kind, data, dir)?;
        self.inodes[dir as usize].entries.insert(name.clone(), ino);
        self.push(
            site,
            OpKind::Link {
                dir,
                name: Name(name),
                ino,
                new: true,
            },
            path,
        );
        Ok(ino)
    }

    pub(super) fn rename(&mut self, site: &CallSite<'_>, r: &Rename) -> R<()> {
        let pid = site.pid;
        if r.whiteout {
            return Err(Fault::unmodelable("RENAME_WHITEOUT is not modelled"));
        }
        let src = self.resolve(pid, r.from_dirfd, &r.from, false);
        let dst = self.resolve(pid, r.to_dirfd, &r.to, false);
        match (src, dst.clone()) {
            (
                Resolved::In {
                    entry: Some((fdir, fname)),
                    ino: Some(ino),
                },
                Resolved::In {
                    entry: Some((tdir, tname)),
                    ino: replaced,
                },
            ) => self.rename_inside(site, r, (fdir, fname), ino, (tdir, tname), replaced),
            (
                Resolved::In {
                    entry: Some((dir, name)),
                    ino: Some(ino),
                },
                Resolved::Out(_),
            ) => {
                if r.exchange {
                    return Err(Fault::unmodelable("exchanges a file inside the directory under test with one outside; its bytes are not in the log"));
                }
                if let Resolved::Out(q) = &dst {
                    self.outside_forget(q);
                }
                self.unlink_entry(site, (dir, name), ino, &r.from);
                Ok(())
            }
            (
                Resolved::Out(p),
                Resolved::In {
                    entry: Some((tdir, tname)),
                    ino: replaced,
                },
            ) if !r.exchange && self.outside_file(&p).is_some() => {
                let Some((odir, oname, ino)) = self.outside_take(&p) else {
                    return Err(self.diverged(&r.from, "rename"));
                };
                self.rename_inside(site, r, (odir, oname), ino, (tdir, tname), replaced)
            }
            (Resolved::Out(_), Resolved::In { .. }) => Err(Fault::unmodelable(format!(
                "moves `{}` from outside the directory under test into it, a file the run did not create new there (with O_CREAT|O_EXCL), so its bytes are not in the log (create it in the directory, or seed it with --init)",
                String::from_utf8_lossy(&r.from)
            ))),
            (Resolved::Out(p), Resolved::Out(q)) => {
                self.stats.outside += 1;
                if r.exchange {
                    self.outside_forget(&p);
                    self.outside_forget(&q);
                } else {
                    self.outside_move(&p, &q);
                }
                Ok(())
            }
            _ => Err(self.diverged(&r.from, "rename")),
        }
    }

    /// A rename (or exchange) of `ino` at `from` to `to`, both inside the
    /// directory under test; `replaced` is the inode `to` named.
    pub(super) fn rename_inside(
        &mut self,
        site: &CallSite<'_>,
        r: &Rename,
        (fdir, fname): (Ino, Vec<u8>),
        ino: Ino,
        (tdir, tname): (Ino, Vec<u8>),
        replaced: Option<Ino>,
    ) -> R<()> {
        let exchange = r.exchange;
        if replaced == Some(ino) && !exchange {
            return Ok(()); // Two links to one inode: POSIX says nothing happens.
        }
        if exchange {
            let other = replaced.ok_or_else(|| self.diverged(&r.to, "RENAME_EXCHANGE"))?;
            self.inodes[fdir as usize]
                .entries
                .insert(fname.clone(), other);
            self.inodes[tdir as usize]
                .entries
                .insert(tname.clone(), ino);
            if self.inodes[other as usize].kind == InodeKind::Dir {
                self.inodes[other as usize].parent = fdir;
            }
        } else {
            self.inodes[fdir as usize].entries.remove(&fname);
            self.inodes[tdir as usize]
                .entries
                .insert(tname.clone(), ino);
        }
        if self.inodes[ino as usize].kind == InodeKind::Dir {
            self.inodes[ino as usize].parent = tdir;
        }
        self.push(
            site,
            OpKind::Rename {
                from_dir: fdir,
                from_name: Name(fname),
                to_dir: tdir,
                to_name: Name(tname),
                ino,
                replaced,
                exchange,
            },
            &r.from,
        );
        Ok(())
    }

    pub(super) fn unlink(&mut self, site: &CallSite<'_>, dirfd: i64, path: &[u8]) -> R<()> {
        match self.resolve(site.pid, dirfd, path, false) {
            Resolved::In {
                entry: Some((dir, name)),
                ino: Some(ino),
            } => {
                self.unlink_entry(site, (dir, name), ino, path);
                Ok(())
            }
            Resolved::Out(p) => {
                self.stats.outside += 1;
                self.outside_unlink(site, &p);
                Ok(())
            }
            _ => Err(self.diverged(path, "unlink")),
        }
    }

    /// Removes `name` (naming `ino`) from `dir`, as the call at `site` on
    /// `path` did.
    pub(super) fn unlink_entry(
        &mut self,
        site: &CallSite<'_>,
        (dir, name): (Ino, Vec<u8>),
        ino: Ino,
        path: &[u8],
    ) {
        self.inodes[dir as usize].entries.remove(&name);
        self.push(
            site,
            OpKind::Unlink {
                dir,
                name: Name(name),
                ino,
            },
            path,
        );
    }

    pub(super) fn link(&mut self, site: &CallSite<'_>, l: &Link) -> R<()> {
        let pid = site.pid;
        let src: Option<Ino> = if l.from.is_empty() && l.empty_path {
            match self.ofd(pid, l.from_dirfd).map(|o| &o.target) {
                Some(Target::Inode(i)) => Some(*i),
                _ => None,
            }
        } else if let Some(p) = &l.from_proc_fd {
            self.proc_fd_inode(pid, p)
        } else {
            match self.resolve(pid, l.from_dirfd, &l.from, l.follow) {
                Resolved::In { ino: Some(i), .. } => Some(i),
                Resolved::Out(_) => None,
                _ => return Err(self.diverged(&l.from, "link")),
            }
        };
        match (src, self.resolve(pid, l.to_dirfd, &l.to, false)) {
            (
                Some(ino),
                Resolved::In {
                    entry: Some((dir, name)),
                    ino: None,
                },
            ) => {
                self.inodes[dir as usize].entries.insert(name.clone(), ino);
                self.push(
                    site,
                    OpKind::Link {
                        dir,
                        name: Name(name),
                        ino,
                        new: false,
                    },
                    &l.to,
                );
                Ok(())
            }
            (None, Resolved::In { .. }) => Err(Fault::unmodelable(format!(
                "links `{}` into the directory under test from a file the log does not hold",
                String::from_utf8_lossy(&l.to)
            ))),
            (_, Resolved::Out(_)) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(&l.to, "link")),
        }
    }

    pub(super) fn create(
        &mut self,
        site: &CallSite<'_>,
        dirfd: i64,
        path: &[u8],
        kind: InodeKind,
        data: Vec<u8>,
    ) -> R<()> {
        match self.resolve(site.pid, dirfd, path, false) {
            Resolved::In {
                entry: Some((dir, name)),
                ino: None,
            } => {
                self.link_new(site, dir, name, kind, data, path)?;
                Ok(())
            }
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(self.diverged(path, "create")),
        }
    }

    pub(super) fn mknod(
        &mut self,
        site: &CallSite<'_>,
        dirfd: i64,
        path: &[u8],
        regular: bool,
    ) -> R<()> {
        if regular {
            return self.create(site, dirfd, path, InodeKind::File, Vec::new());
        }
        match self.resolve(site.pid, dirfd, path, false) {
            Resolved::Out(_) => {
                self.stats.outside += 1;
                Ok(())
            }
            _ => Err(Fault::unmodelable(format!(
                "creates a special file `{}` in the directory under test; blackout models regular files, directories and symlinks",
                String::from_utf8_lossy(path)
            ))),
        }
    }
}
