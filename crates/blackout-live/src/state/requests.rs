//! The requests that change the view: each made in the view at once and
//! recorded as a pending op (entries, data, attributes), within the backing
//! file system's limits.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::sync::Arc;

use blackout_oplog::ops::{Ino, InodeKind, Name, OpKind};
use blackout_oplog::store::Halves;

use super::{errno, rel_join, Errno, Handle, Live, Node, SetTime};
use crate::pending::{Attr, Change, PendingOp};
use crate::tree::{self, Meta, Reach};

impl Live {
    fn push(
        &mut self,
        change: impl Into<Change>,
        call: &'static str,
        path: impl Into<Arc<str>>,
        sync_path: impl Into<Arc<str>>,
    ) {
        let sync_path: Arc<str> = sync_path.into();
        self.pending.push(PendingOp {
            change: change.into(),
            call,
            source_sync_path: sync_path.clone(),
            path: path.into(),
            to: None,
            sync_path,
            data: Box::default(),
            left: Halves::BOTH,
        });
    }

    /// A new inode named `name` in `dir`, made in the view by `make`, its
    /// entry pending.
    fn add(
        &mut self,
        dir: Ino,
        name: &OsStr,
        meta: Meta,
        call: &'static str,
        make: impl FnOnce(&Path) -> io::Result<()>,
    ) -> Result<(Ino, Reach), Errno> {
        self.dir(dir)?;
        self.limits.name(name.as_bytes())?;
        let n = Name(name.as_bytes().to_vec());
        let dir_rel = self.rel(dir);
        let rel = rel_join(&dir_rel, &n);
        let fire = self.gate(call, &rel, None)?;
        let path = self.entry_path(dir, name)?;
        make(&path).map_err(|e| errno(&e))?;
        let _ = tree::finish(&path, &meta);
        let ino = Ino::try_from(self.nodes.len()).map_err(|_| libc::ENOSPC)?;
        let kind = meta.kind;
        self.nodes.push(Node {
            kind,
            file_type: super::file_type(&meta),
            names: vec![(dir, n.clone())],
            entries: BTreeMap::new(),
        });
        self.nodes[dir as usize].entries.insert(n.clone(), ino);
        self.durable.declare(ino, meta);
        self.push(
            OpKind::Link {
                dir,
                name: n,
                ino,
                new: true,
            },
            call,
            rel,
            dir_rel,
        );
        self.after(fire);
        Ok((ino, path))
    }

    /// mkdir.
    ///
    /// # Errors
    ///
    /// The view's mkdir.
    pub fn mkdir(&mut self, dir: Ino, name: &OsStr, meta: Meta) -> Result<Ino, Errno> {
        self.add(dir, name, meta, "mkdir", |p| fs::create_dir(p))
            .map(|(i, _)| i)
    }

    /// mknod of a fifo, a unix socket or a device node (`meta.special`):
    /// an entry like a file's.
    ///
    /// # Errors
    ///
    /// The view's mknod (`EPERM` for a device node without the right).
    pub fn mknod(&mut self, dir: Ino, name: &OsStr, meta: Meta) -> Result<Ino, Errno> {
        let made = meta.clone();
        self.add(dir, name, meta, "mknod", |p| tree::make(p, &made, None))
            .map(|(i, _)| i)
    }

    /// symlink.
    ///
    /// # Errors
    ///
    /// The view's symlink.
    pub fn symlink(&mut self, dir: Ino, name: &OsStr, meta: Meta) -> Result<Ino, Errno> {
        let target = meta.target.clone();
        self.add(dir, name, meta, "symlink", |p| {
            std::os::unix::fs::symlink(OsStr::from_bytes(&target), p)
        })
        .map(|(i, _)| i)
    }

    /// create (a new file, opened with `flags`): its inode and handle.
    ///
    /// # Errors
    ///
    /// The view's create (`EEXIST` when the name is taken: the kernel
    /// asks only when it was not).
    pub fn create(
        &mut self,
        dir: Ino,
        name: &OsStr,
        meta: Meta,
        flags: i32,
    ) -> Result<(Ino, u64), Errno> {
        let (ino, path) = self.add(dir, name, meta, "create", |p| {
            File::create_new(p).map(|_| ())
        })?;
        let fh = self.open_path(ino, &path, flags)?;
        Ok((ino, fh))
    }

    fn open_path(&mut self, ino: Ino, path: &Path, flags: i32) -> Result<u64, Errno> {
        let write = flags & libc::O_ACCMODE != libc::O_RDONLY;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(write)
            .open(path)
            .or_else(|_| fs::OpenOptions::new().read(!write).write(write).open(path))
            .map_err(|e| errno(&e))?;
        let fh = self.next_fh;
        self.next_fh += 1;
        let rel = self.rel(ino);
        self.handles.insert(
            fh,
            Handle {
                file,
                ino,
                path: rel.into(),
                sync: flags & libc::O_DSYNC != 0,
            },
        );
        Ok(fh)
    }

    /// open.
    ///
    /// # Errors
    ///
    /// The view's open.
    pub fn open(&mut self, ino: Ino, flags: i32) -> Result<u64, Errno> {
        self.powered()?;
        let path = self.view_path(ino)?;
        self.open_path(ino, &path, flags)
    }

    /// release (close).
    pub fn release(&mut self, fh: u64) {
        self.handles.remove(&fh);
    }

    /// read.
    ///
    /// # Errors
    ///
    /// `EBADF`, the view's pread.
    pub fn read(&self, fh: u64, off: u64, size: u32) -> Result<Vec<u8>, Errno> {
        self.powered()?;
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let mut buf = vec![0u8; size as usize];
        let mut got = 0;
        while got < buf.len() {
            match h.file.read_at(&mut buf[got..], off + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(errno(&e)),
            }
        }
        buf.truncate(got);
        Ok(buf)
    }

    /// write: the bytes reach the view, and a pending write remembers
    /// them (synced at once through an `O_SYNC` or `O_DSYNC` handle).
    ///
    /// # Errors
    ///
    /// `EBADF`, the view's pwrite.
    pub fn write(&mut self, fh: u64, off: u64, data: &[u8]) -> Result<u32, Errno> {
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let (ino, path, sync) = (h.ino, h.path.clone(), h.sync);
        self.limits.size(off, data.len() as u64)?;
        // While the power is off, the kernel's writeback (what programs
        // wrote before, held in its page cache) is still taken, as pending
        // writes only: the crash drops them, and says so.
        let frozen = self.frozen;
        let fire = if frozen {
            false
        } else {
            self.gate("write", &path, None)?
        };
        if !frozen {
            let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
            h.file.write_all_at(data, off).map_err(|e| errno(&e))?;
        }
        self.pending.push(PendingOp {
            change: Change::Op(OpKind::Write {
                ino,
                off,
                data: Default::default(),
            }),
            call: "write",
            sync_path: path.clone(),
            source_sync_path: path.clone(),
            path,
            to: None,
            data: data.into(),
            left: Halves::BOTH,
        });
        if sync && !frozen {
            self.sync_inode(ino, true)?;
        }
        self.after(fire);
        Ok(data.len() as u32)
    }

    /// setattr: a size change is a pending truncate, a mode or owner change
    /// a pending change to the inode's attributes (durable by its fsync);
    /// times are set in the view (an fsync makes them durable as they are
    /// then).
    ///
    /// # Errors
    ///
    /// The view's calls.
    pub fn setattr(
        &mut self,
        ino: Ino,
        fh: Option<u64>,
        size: Option<u64>,
        mode: Option<u32>,
        owner: (Option<u32>, Option<u32>),
        times: [Option<SetTime>; 2],
    ) -> Result<(), Errno> {
        self.powered()?;
        let handle_path = fh
            .and_then(|f| self.handles.get(&f))
            .map(|h| h.path.clone());
        let rel: Arc<str> = handle_path.unwrap_or_else(|| self.rel(ino).into());
        if let Some(size) = size {
            self.limits.size(size, 0)?;
            let fire = self.gate("truncate", &rel, None)?;
            match fh.and_then(|f| self.handles.get(&f)) {
                Some(h) => h.file.set_len(size),
                None => fs::OpenOptions::new()
                    .write(true)
                    .open(self.view_path(ino)?)
                    .and_then(|f| f.set_len(size)),
            }
            .map_err(|e| errno(&e))?;
            self.push(
                OpKind::Truncate { ino, size },
                "truncate",
                rel.clone(),
                rel.clone(),
            );
            self.after(fire);
        }
        if let Some(mode) = mode.filter(|_| self.kind(ino) != Some(InodeKind::Symlink)) {
            let fire = self.gate("chmod", &rel, None)?;
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(
                &self.view_path(ino)?,
                fs::Permissions::from_mode(mode & 0o7777),
            )
            .map_err(|e| errno(&e))?;
            // What the view holds now (a chown may have cleared set-id bits).
            let md = self.metadata(ino, fh)?;
            self.push_attr(ino, Attr::Mode(md.mode() & 0o7777), "chmod", &rel);
            self.after(fire);
        }
        if owner.0.is_some() || owner.1.is_some() {
            let fire = self.gate("chown", &rel, None)?;
            std::os::unix::fs::lchown(&self.view_path(ino)?, owner.0, owner.1)
                .map_err(|e| errno(&e))?;
            self.push_attr(ino, Attr::Owner(owner.0, owner.1), "chown", &rel);
            self.after(fire);
        }
        if times.iter().any(Option::is_some) {
            let stamp = |t: &Option<SetTime>| match t {
                None => rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_OMIT,
                },
                Some(SetTime::Now) => rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                },
                Some(SetTime::At(secs, nsecs)) => rustix::fs::Timespec {
                    tv_sec: *secs,
                    tv_nsec: *nsecs as _,
                },
            };
            let stamps = rustix::fs::Timestamps {
                last_access: stamp(&times[0]),
                last_modification: stamp(&times[1]),
            };
            let nofollow = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
            rustix::fs::utimensat(rustix::fs::CWD, &*self.view_path(ino)?, &stamps, nofollow)
                .map_err(|e| e.raw_os_error())?;
        }
        Ok(())
    }

    /// Clears the set-user-ID bit of a regular file, and its set-group-ID
    /// bit if it is group-executable, as a write or truncate by a caller
    /// without the right to keep them does: a pending chmod like any.
    ///
    /// # Errors
    ///
    /// The view's chmod.
    pub fn kill_suidgid(&mut self, ino: Ino) -> Result<(), Errno> {
        let md = self.metadata(ino, None)?;
        let mode = md.mode();
        let mut kept = mode & 0o7777 & !libc::S_ISUID;
        if mode & libc::S_IXGRP != 0 {
            kept &= !libc::S_ISGID;
        }
        if !md.is_file() || kept == mode & 0o7777 {
            return Ok(());
        }
        self.setattr(ino, None, None, Some(kept), (None, None), [None, None])
    }

    /// Records a change to inode `ino`'s attributes, made in the view by
    /// `call` on `rel`, as pending until its fsync.
    fn push_attr(&mut self, ino: Ino, attr: Attr, call: &'static str, rel: &Arc<str>) {
        self.push(Change::Attr(ino, attr), call, rel.clone(), rel.clone());
    }

    /// setxattr: made in the view, pending until the inode's fsync.
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` when the backing file system keeps no extended
    /// attributes, the view's call (`EEXIST`, `ENODATA` with `flags`).
    pub fn setxattr(
        &mut self,
        ino: Ino,
        name: &OsStr,
        value: &[u8],
        flags: i32,
    ) -> Result<(), Errno> {
        self.powered()?;
        self.limits.xattrs()?;
        let rel: Arc<str> = self.rel(ino).into();
        let fire = self.gate("setxattr", &rel, None)?;
        let flags = rustix::fs::XattrFlags::from_bits_retain(flags as _);
        rustix::fs::lsetxattr(&*self.view_path(ino)?, name, value, flags)
            .map_err(|e| e.raw_os_error())?;
        let attr = Attr::SetXattr(name.as_bytes().to_vec(), value.to_vec());
        self.push_attr(ino, attr, "setxattr", &rel);
        self.after(fire);
        Ok(())
    }

    /// removexattr: made in the view, pending until the inode's fsync.
    ///
    /// # Errors
    ///
    /// The view's call (`ENODATA`).
    pub fn removexattr(&mut self, ino: Ino, name: &OsStr) -> Result<(), Errno> {
        self.powered()?;
        let rel: Arc<str> = self.rel(ino).into();
        let fire = self.gate("removexattr", &rel, None)?;
        rustix::fs::lremovexattr(&*self.view_path(ino)?, name).map_err(|e| e.raw_os_error())?;
        self.push_attr(
            ino,
            Attr::RemoveXattr(name.as_bytes().to_vec()),
            "removexattr",
            &rel,
        );
        self.after(fire);
        Ok(())
    }

    /// fallocate: a pending fallocate (the modes that change what a reader
    /// sees; collapsing or inserting a range is refused).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` for a mode the model does not have, the view's call.
    pub fn fallocate(&mut self, fh: u64, off: u64, len: u64, mode: i32) -> Result<(), Errno> {
        let known =
            libc::FALLOC_FL_KEEP_SIZE | libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE;
        if mode & !known != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let (ino, path) = (h.ino, h.path.clone());
        self.limits.size(off, len)?;
        let fire = self.gate("fallocate", &path, None)?;
        let h = self.handles.get(&fh).ok_or(libc::EBADF)?;
        let flags = rustix::fs::FallocateFlags::from_bits_retain(mode as u32);
        rustix::fs::fallocate(&h.file, flags, off, len).map_err(|e| e.raw_os_error())?;
        let zero = mode & (libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_ZERO_RANGE) != 0;
        let keep_size = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        self.push(
            OpKind::Fallocate {
                ino,
                off,
                len,
                zero,
                keep_size,
            },
            "fallocate",
            path.clone(),
            path,
        );
        self.after(fire);
        Ok(())
    }

    /// link: a new name for a file.
    ///
    /// # Errors
    ///
    /// The view's link.
    pub fn link(&mut self, ino: Ino, dir: Ino, name: &OsStr) -> Result<(), Errno> {
        self.dir(dir)?;
        self.limits.name(name.as_bytes())?;
        self.limits.link(self.metadata(ino, None)?.nlink())?;
        let n = Name(name.as_bytes().to_vec());
        let dir_rel = self.rel(dir);
        let rel = rel_join(&dir_rel, &n);
        let fire = self.gate("link", &rel, None)?;
        let from = self.view_path(ino)?;
        fs::hard_link(from, self.entry_path(dir, name)?).map_err(|e| errno(&e))?;
        self.nodes[ino as usize].names.push((dir, n.clone()));
        self.nodes[dir as usize].entries.insert(n.clone(), ino);
        self.push(
            OpKind::Link {
                dir,
                name: n,
                ino,
                new: false,
            },
            "link",
            rel,
            dir_rel,
        );
        self.after(fire);
        Ok(())
    }

    /// unlink or rmdir.
    ///
    /// # Errors
    ///
    /// `ENOENT`, the view's call (`ENOTEMPTY`, `EISDIR`, ...).
    pub fn remove(&mut self, dir: Ino, name: &OsStr, rmdir: bool) -> Result<(), Errno> {
        let n = Name(name.as_bytes().to_vec());
        let ino = *self.dir(dir)?.entries.get(&n).ok_or(libc::ENOENT)?;
        let dir_rel = self.rel(dir);
        let rel = rel_join(&dir_rel, &n);
        let call = if rmdir { "rmdir" } else { "unlink" };
        let fire = self.gate(call, &rel, None)?;
        let path = self.entry_path(dir, name)?;
        if rmdir {
            fs::remove_dir(path)
        } else {
            fs::remove_file(path)
        }
        .map_err(|e| errno(&e))?;
        self.nodes[dir as usize].entries.remove(&n);
        self.nodes[ino as usize]
            .names
            .retain(|(d, x)| !(*d == dir && *x == n));
        self.push(OpKind::Unlink { dir, name: n, ino }, call, rel, dir_rel);
        self.after(fire);
        Ok(())
    }

    /// rename (`flags`: `RENAME_NOREPLACE`, `RENAME_EXCHANGE`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for other flags, `ENOENT`, the view's rename.
    pub fn rename(
        &mut self,
        dir: Ino,
        name: &OsStr,
        to_dir: Ino,
        to_name: &OsStr,
        flags: u32,
    ) -> Result<(), Errno> {
        let known = libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE;
        if flags & !known != 0 {
            return Err(libc::EINVAL);
        }
        let exchange = flags & libc::RENAME_EXCHANGE != 0;
        self.limits.name(to_name.as_bytes())?;
        let (from_n, to_n) = (
            Name(name.as_bytes().to_vec()),
            Name(to_name.as_bytes().to_vec()),
        );
        let ino = *self.dir(dir)?.entries.get(&from_n).ok_or(libc::ENOENT)?;
        let replaced = self.dir(to_dir)?.entries.get(&to_n).copied();
        let (dir_rel, to_dir_rel) = (self.rel(dir), self.rel(to_dir));
        let (rel, to_rel) = (rel_join(&dir_rel, &from_n), rel_join(&to_dir_rel, &to_n));
        let call = if exchange { "exchange" } else { "rename" };
        let fire = self.gate(call, &rel, Some(&to_rel))?;
        let (from_p, to_p) = (
            self.entry_path(dir, name)?,
            self.entry_path(to_dir, to_name)?,
        );
        let rflags = rustix::fs::RenameFlags::from_bits_retain(flags);
        rustix::fs::renameat_with(rustix::fs::CWD, &*from_p, rustix::fs::CWD, &*to_p, rflags)
            .map_err(|e| e.raw_os_error())?;
        if replaced == Some(ino) {
            // Two names of one file: rename does nothing.
            return Ok(());
        }
        self.nodes[dir as usize].entries.remove(&from_n);
        let moved = &mut self.nodes[ino as usize].names;
        moved.retain(|(d, x)| !(*d == dir && *x == from_n));
        moved.push((to_dir, to_n.clone()));
        self.nodes[to_dir as usize]
            .entries
            .insert(to_n.clone(), ino);
        if let Some(r) = replaced {
            let names = &mut self.nodes[r as usize].names;
            names.retain(|(d, x)| !(*d == to_dir && *x == to_n));
            if exchange {
                names.push((dir, from_n.clone()));
                self.nodes[dir as usize].entries.insert(from_n.clone(), r);
            }
        }
        self.pending.push(PendingOp {
            change: Change::Op(OpKind::Rename {
                from_dir: dir,
                from_name: from_n,
                to_dir,
                to_name: to_n,
                ino,
                replaced,
                exchange,
            }),
            call,
            path: rel.into(),
            to: Some(to_rel),
            sync_path: to_dir_rel.into(),
            source_sync_path: dir_rel.into(),
            data: Box::default(),
            left: Halves::BOTH,
        });
        self.after(fire);
        Ok(())
    }
}
