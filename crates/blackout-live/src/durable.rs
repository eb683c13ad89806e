//! The durable tree: the backing directory as a crash would leave it, and
//! the ops a sync (or a crash that keeps them) makes durable, applied to
//! it one at a time.
//!
//! An op is applied as [`blackout_oplog::store::apply_one`] applies it to
//! a model's inodes: a data op changes its file's bytes, an entry op its
//! directory's entries, a rename by halves. Here the inodes are real: an
//! inode with a durable name is the file at that path in the backing
//! directory (a hard link per further name); an inode whose data is
//! durable but whose name is not yet (a file fsynced before its
//! directory) waits in the orphans directory, as the inode a real disk
//! holds with no entry for it, and moves in when an entry for it becomes
//! durable. A crash removes the orphans, as a file system's check frees
//! inodes nothing names.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use blackout_oplog::ops::{Ino, InodeKind, Name, OpKind, ROOT_INO};
use blackout_oplog::store::Halves;

use crate::pending::Attr;
use crate::tree::{self, Meta, Reach, Scanned};

/// One inode of the durable tree.
#[derive(Debug, Clone)]
struct Node {
    meta: Meta,
    /// Its durable entries.
    names: Vec<(Ino, Name)>,
    /// Whether it waits in the orphans directory.
    orphan: bool,
    /// A directory's durable entries.
    entries: BTreeMap<Name, Ino>,
}

/// The durable tree (the backing directory) and the inodes it may come to
/// hold.
#[derive(Debug)]
pub struct Durable {
    root: PathBuf,
    orphans: PathBuf,
    same_fs: bool,
    nodes: HashMap<Ino, Node>,
    /// The file the last data op was applied to, kept open for the next
    /// (an fsync applies a file's pending writes one after another);
    /// dropped by every entry op, which may move what an inode is.
    open: Option<OpenFile>,
}

/// A durable file kept open between data ops.
#[derive(Debug)]
struct OpenFile {
    ino: Ino,
    file: fs::File,
    /// Its length, kept as the ops applied change it (`None`: unknown).
    len: Option<u64>,
    /// Whether it was seen to still have a name since the last batch.
    checked: bool,
}

/// One field of an open file's metadata, asked for alone: `statx` with
/// only `mask`, so the file's times are not read (reading them makes the
/// kernel hand out finer timestamps everywhere afterwards, and a program's
/// writes on the mount then dirty its times at every fsync).
fn statx_of(file: &fs::File, mask: rustix::fs::StatxFlags) -> io::Result<rustix::fs::Statx> {
    Ok(rustix::fs::statx(
        file,
        "",
        rustix::fs::AtFlags::EMPTY_PATH,
        mask,
    )?)
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl Durable {
    /// The durable tree at `root` as `scanned` read it; inodes without a
    /// durable name wait in `orphans` (an empty directory).
    pub fn new(root: &Path, orphans: &Path, scanned: &[Scanned]) -> Durable {
        let nodes = scanned
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let node = Node {
                    meta: s.meta.clone(),
                    names: s.names.clone(),
                    orphan: false,
                    entries: s.entries.clone(),
                };
                (i as Ino, node)
            })
            .collect();
        Durable {
            root: root.to_path_buf(),
            orphans: orphans.to_path_buf(),
            same_fs: tree::same_fs(root, orphans),
            nodes,
            open: None,
        }
    }

    /// Makes inode `ino` known (made in the view): it exists durably only
    /// once an op on it is applied.
    pub fn declare(&mut self, ino: Ino, meta: Meta) {
        self.nodes.entry(ino).or_insert(Node {
            meta,
            names: Vec::new(),
            orphan: false,
            entries: BTreeMap::new(),
        });
    }

    /// Applies a change to an inode's attributes on its durable copy (made
    /// in the orphans directory if it has none yet, as a write is); the
    /// mode and owner are also those it is made with from then on.
    ///
    /// # Errors
    ///
    /// chmod, chown, setxattr or removexattr on the backing file.
    pub fn set_attr(&mut self, ino: Ino, attr: &Attr) -> io::Result<()> {
        self.open = None;
        let p = self.ensure(ino)?;
        let n = self
            .nodes
            .get_mut(&ino)
            .ok_or_else(|| invalid(format!("inode {ino} unknown to the durable tree")))?;
        match attr {
            Attr::Mode(mode) => {
                n.meta.mode = *mode;
                if n.meta.kind != InodeKind::Symlink {
                    use std::os::unix::fs::PermissionsExt;
                    fs::set_permissions(&p, fs::Permissions::from_mode(*mode))?;
                }
            }
            Attr::Owner(uid, gid) => {
                n.meta.uid = uid.unwrap_or(n.meta.uid);
                n.meta.gid = gid.unwrap_or(n.meta.gid);
                std::os::unix::fs::lchown(&p, *uid, *gid)?;
            }
            Attr::SetXattr(name, value) => {
                let flags = rustix::fs::XattrFlags::empty();
                rustix::fs::lsetxattr(&*p, OsStr::from_bytes(name), value, flags)?;
            }
            Attr::RemoveXattr(name) => {
                match rustix::fs::lremovexattr(&*p, OsStr::from_bytes(name)) {
                    Err(rustix::io::Errno::NODATA) | Ok(()) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// Sets the access and modification times of inode `ino`'s durable
    /// copy, if it has one (an fsync makes the times it has then durable).
    ///
    /// # Errors
    ///
    /// utimensat.
    pub fn set_times(&self, ino: Ino, times: &rustix::fs::Timestamps) -> io::Result<()> {
        let Some(p) = self.reach(ino)? else {
            return Ok(());
        };
        let nofollow = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
        rustix::fs::utimensat(rustix::fs::CWD, &*p, times, nofollow)?;
        Ok(())
    }

    /// Where inode `ino` is on disk, if it is anywhere: under its first
    /// durable name, or in the orphans directory.
    pub fn location(&self, ino: Ino) -> Option<PathBuf> {
        if ino == ROOT_INO {
            return Some(self.root.clone());
        }
        let n = self.nodes.get(&ino)?;
        if let Some((dir, name)) = n.names.first() {
            return self
                .location(*dir)
                .map(|p| p.join(OsStr::from_bytes(&name.0)));
        }
        n.orphan.then(|| self.orphans.join(ino.to_string()))
    }

    /// [`Durable::location`] made reachable by any call, however long.
    ///
    /// # Errors
    ///
    /// Opening a directory on the way.
    pub fn reach(&self, ino: Ino) -> io::Result<Option<Reach>> {
        self.location(ino).map(tree::reach).transpose()
    }

    /// Where the entry `dir/name` is on disk (its directory must be
    /// somewhere), reachable by any call.
    fn entry_at(&self, dir: Ino, name: &Name) -> io::Result<Reach> {
        let d = self
            .location(dir)
            .ok_or_else(|| invalid(format!("directory inode {dir} is nowhere")))?;
        tree::reach(d.join(OsStr::from_bytes(&name.0)))
    }

    /// The path of inode `ino`, made in the orphans directory if it is
    /// nowhere yet (a write to a file whose entry is not durable).
    fn ensure(&mut self, ino: Ino) -> io::Result<Reach> {
        if let Some(p) = self.reach(ino)? {
            return Ok(p);
        }
        let n = self
            .nodes
            .get_mut(&ino)
            .ok_or_else(|| invalid(format!("inode {ino} unknown to the durable tree")))?;
        let p = self.orphans.join(ino.to_string());
        tree::make_empty(&p, &n.meta)?;
        n.orphan = true;
        tree::reach(p)
    }

    /// Applies one op (its `halves` for a rename); `data` is a write's
    /// bytes (all of them, or what a tear left), `size_only` a torn write
    /// of which only the size reached the disk. `alive` says whether an
    /// inode may still be needed (named in the view or by a pending op):
    /// one that loses its last durable name then waits as an orphan
    /// instead of being removed.
    ///
    /// # Errors
    ///
    /// The calls that change the backing directory.
    pub fn apply(
        &mut self,
        kind: &OpKind,
        data: &[u8],
        halves: Halves,
        size_only: bool,
        alive: &dyn Fn(Ino) -> bool,
    ) -> io::Result<()> {
        if kind.data_inode().is_none() {
            // An entry op may move what an inode is on disk.
            self.open = None;
        }
        match kind {
            OpKind::Write { ino, off, .. } => {
                let o = self.open(*ino)?;
                let end = off + data.len() as u64;
                let len = match o.len {
                    Some(len) => len,
                    None => statx_of(&o.file, rustix::fs::StatxFlags::SIZE)?.stx_size,
                };
                o.len = Some(len.max(end));
                if size_only {
                    if len < end {
                        o.file.set_len(end)?;
                    }
                    Ok(())
                } else {
                    // Refused (a full disk), a write takes back what it
                    // added past the file's end: it stays pending whole.
                    o.file.write_all_at(data, *off).inspect_err(|_| {
                        o.len = None;
                        if end > len {
                            let _ = o.file.set_len(len);
                        }
                    })
                }
            }
            OpKind::Truncate { ino, size } => {
                let o = self.open(*ino)?;
                o.len = None;
                o.file.set_len(*size)
            }
            OpKind::Fallocate {
                ino,
                off,
                len,
                zero,
                keep_size,
            } => {
                let o = self.open(*ino)?;
                o.len = None;
                fallocate(&o.file, *off, *len, *zero, *keep_size)
            }
            OpKind::Link { dir, name, ino, .. } => self.set_entry(*dir, name, *ino, alive),
            OpKind::Unlink { dir, name, ino } => self.remove_entry(*dir, name, *ino, alive),
            OpKind::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ino,
                replaced,
                exchange,
            } => {
                if halves.dest {
                    self.set_entry(*to_dir, to_name, *ino, alive)?;
                }
                if halves.source {
                    match (exchange, replaced) {
                        (true, Some(r)) => self.set_entry(*from_dir, from_name, *r, alive)?,
                        (true, None) => {}
                        (false, _) => self.remove_entry(*from_dir, from_name, *ino, alive)?,
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A batch of ops applied: the file kept open is looked at again before
    /// the next op on it (a file removed behind the mount's back is then
    /// seen as gone, not written to).
    pub fn close(&mut self) {
        if let Some(o) = self.open.as_mut() {
            o.checked = false;
        }
    }

    fn open(&mut self, ino: Ino) -> io::Result<&mut OpenFile> {
        let stale = match &self.open {
            Some(o) if o.ino == ino && !o.checked => {
                statx_of(&o.file, rustix::fs::StatxFlags::NLINK)?.stx_nlink == 0
            }
            Some(o) => o.ino != ino,
            None => true,
        };
        if stale {
            self.open = None;
            let p = self.ensure(ino)?;
            let file = fs::OpenOptions::new().write(true).open(p)?;
            self.open = Some(OpenFile {
                ino,
                file,
                len: None,
                checked: true,
            });
        }
        let o = self.open.as_mut().expect("just opened");
        o.checked = true;
        Ok(o)
    }

    /// Makes `dir/name` name `ino` durably (what was there loses the name).
    fn set_entry(
        &mut self,
        dir: Ino,
        name: &Name,
        ino: Ino,
        alive: &dyn Fn(Ino) -> bool,
    ) -> io::Result<()> {
        self.ensure(dir)?;
        let current = self
            .nodes
            .get(&dir)
            .and_then(|d| d.entries.get(name).copied());
        if current == Some(ino) {
            return Ok(());
        }
        if let Some(old) = current {
            self.detach(dir, name, old, alive)?;
        }
        let target = self.entry_at(dir, name)?;
        let node = self
            .nodes
            .get(&ino)
            .ok_or_else(|| invalid(format!("inode {ino} unknown to the durable tree")))?;
        let is_dir = node.meta.kind == InodeKind::Dir;
        let named = !node.names.is_empty();
        match self.reach(ino)? {
            // A directory has one name: it moves (what its other half
            // would do; a real tree cannot show it under both).
            Some(from) if named && is_dir => {
                fs::rename(&from, &target)?;
                let (d, n) = self.nodes.get_mut(&ino).expect("known").names.remove(0);
                if let Some(parent) = self.nodes.get_mut(&d) {
                    parent.entries.remove(&n);
                }
            }
            Some(from) if named => fs::hard_link(&from, &target)?,
            Some(from) => {
                tree::move_tree(&from, &target, self.same_fs)?;
                self.nodes.get_mut(&ino).expect("known").orphan = false;
            }
            None => tree::make_empty(&target, &node.meta)?,
        }
        self.nodes
            .get_mut(&ino)
            .expect("known")
            .names
            .push((dir, name.clone()));
        if let Some(d) = self.nodes.get_mut(&dir) {
            d.entries.insert(name.clone(), ino);
        }
        Ok(())
    }

    /// Removes `dir/name` durably if it still names `ino` (as the model's
    /// unlink does).
    fn remove_entry(
        &mut self,
        dir: Ino,
        name: &Name,
        ino: Ino,
        alive: &dyn Fn(Ino) -> bool,
    ) -> io::Result<()> {
        let current = self
            .nodes
            .get(&dir)
            .and_then(|d| d.entries.get(name).copied());
        if current != Some(ino) {
            return Ok(());
        }
        self.detach(dir, name, ino, alive)
    }

    /// Takes the entry `dir/name` (naming `ino`) away on disk: the inode
    /// keeps its other names, or waits as an orphan while it may still be
    /// needed, or goes.
    fn detach(
        &mut self,
        dir: Ino,
        name: &Name,
        ino: Ino,
        alive: &dyn Fn(Ino) -> bool,
    ) -> io::Result<()> {
        let path = self.entry_at(dir, name)?;
        if let Some(d) = self.nodes.get_mut(&dir) {
            d.entries.remove(name);
        }
        let node = self
            .nodes
            .get_mut(&ino)
            .expect("an entry names a known inode");
        node.names.retain(|(d, n)| !(*d == dir && n == name));
        if !node.names.is_empty() {
            return fs::remove_file(&path);
        }
        if alive(ino) {
            node.orphan = true;
            let to = self.orphans.join(ino.to_string());
            return tree::move_tree(&path, &to, self.same_fs);
        }
        // Gone: so is everything only it held.
        let mut stack = vec![ino];
        while let Some(i) = stack.pop() {
            if let Some(n) = self.nodes.get_mut(&i) {
                let children: Vec<(Name, Ino)> =
                    std::mem::take(&mut n.entries).into_iter().collect();
                for (cn, c) in children {
                    if let Some(cnode) = self.nodes.get_mut(&c) {
                        cnode.names.retain(|(d, n)| !(*d == i && *n == cn));
                        if cnode.names.is_empty() && !cnode.orphan {
                            stack.push(c);
                        }
                    }
                }
            }
        }
        tree::remove(&path)
    }

    /// Empties the orphans directory: what a crash leaves nothing naming is
    /// freed.
    ///
    /// # Errors
    ///
    /// Removing.
    pub fn free_orphans(&mut self) -> io::Result<()> {
        self.open = None;
        for n in self.nodes.values_mut() {
            n.orphan = false;
        }
        for e in fs::read_dir(&self.orphans)? {
            tree::remove(&e?.path())?;
        }
        Ok(())
    }
}

/// fallocate on the durable copy, or what it leaves when the file system
/// cannot (zeros written, the size set).
fn fallocate(f: &fs::File, off: u64, len: u64, zero: bool, keep_size: bool) -> io::Result<()> {
    use rustix::fs::FallocateFlags as F;
    let flags = match (zero, keep_size) {
        (true, true) => F::PUNCH_HOLE | F::KEEP_SIZE,
        (true, false) => F::ZERO_RANGE,
        (false, true) => F::KEEP_SIZE,
        (false, false) => F::empty(),
    };
    if rustix::fs::fallocate(f, flags, off, len).is_ok() {
        return Ok(());
    }
    let size = f.metadata()?.len();
    let end = off.saturating_add(len);
    if zero {
        let stop = if keep_size { end.min(size) } else { end };
        let zeros = vec![0u8; 1 << 16];
        let mut at = off;
        while at < stop {
            let n = (stop - at).min(zeros.len() as u64) as usize;
            f.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
    }
    if !keep_size && end > size {
        f.set_len(end)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Durable) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("backing");
        fs::create_dir_all(root.join("d")).unwrap();
        fs::write(root.join("d/old"), b"old").unwrap();
        let orphans = t.path().join("orphans");
        fs::create_dir(&orphans).unwrap();
        let scanned = tree::scan(&root, None).unwrap();
        let d = Durable::new(&root, &orphans, &scanned);
        (t, d)
    }

    fn file_meta() -> Meta {
        Meta {
            kind: InodeKind::File,
            mode: 0o644,
            uid: 0,
            gid: 0,
            target: Vec::new(),
            special: None,
        }
    }

    #[test]
    fn data_synced_before_its_entry_waits_as_an_orphan_then_moves_in() {
        let (t, mut d) = setup();
        let yes = |_| true;
        d.declare(9, file_meta());
        let w = OpKind::Write {
            ino: 9,
            off: 0,
            data: Default::default(),
        };
        d.apply(&w, b"new", Halves::BOTH, false, &yes).unwrap();
        assert_eq!(fs::read(t.path().join("orphans/9")).unwrap(), b"new");
        // ino 1 is d (the scan's numbering): the entry lands there.
        let link = OpKind::Link {
            dir: 1,
            name: Name::from("tmp"),
            ino: 9,
            new: true,
        };
        d.apply(&link, b"", Halves::BOTH, false, &yes).unwrap();
        assert_eq!(fs::read(t.path().join("backing/d/tmp")).unwrap(), b"new");
        assert!(!t.path().join("orphans/9").exists());
        // Renamed over old: old's inode, dead, goes.
        let rename = OpKind::Rename {
            from_dir: 1,
            from_name: Name::from("tmp"),
            to_dir: 1,
            to_name: Name::from("old"),
            ino: 9,
            replaced: Some(2),
            exchange: false,
        };
        d.apply(&rename, b"", Halves::BOTH, false, &|_| false)
            .unwrap();
        assert_eq!(fs::read(t.path().join("backing/d/old")).unwrap(), b"new");
        assert!(!t.path().join("backing/d/tmp").exists());
        assert_eq!(fs::read_dir(t.path().join("orphans")).unwrap().count(), 0);
    }

    #[test]
    fn a_rename_whose_source_half_is_lost_leaves_both_names() {
        let (t, mut d) = setup();
        d.declare(5, {
            let mut m = file_meta();
            m.kind = InodeKind::Dir;
            m.mode = 0o755;
            m
        });
        let mkdir = OpKind::Link {
            dir: 0,
            name: Name::from("e"),
            ino: 5,
            new: true,
        };
        d.apply(&mkdir, b"", Halves::BOTH, false, &|_| true)
            .unwrap();
        let rename = OpKind::Rename {
            from_dir: 1,
            from_name: Name::from("old"),
            to_dir: 5,
            to_name: Name::from("moved"),
            ino: 2,
            replaced: None,
            exchange: false,
        };
        let dest = Halves {
            source: false,
            dest: true,
        };
        d.apply(&rename, b"", dest, false, &|_| true).unwrap();
        assert_eq!(fs::read(t.path().join("backing/e/moved")).unwrap(), b"old");
        assert_eq!(fs::read(t.path().join("backing/d/old")).unwrap(), b"old");
    }

    #[test]
    fn a_torn_append_may_leave_only_its_size() {
        let (t, mut d) = setup();
        let w = OpKind::Write {
            ino: 2,
            off: 3,
            data: Default::default(),
        };
        d.apply(&w, b"abcd", Halves::BOTH, true, &|_| true).unwrap();
        assert_eq!(
            fs::read(t.path().join("backing/d/old")).unwrap(),
            b"old\0\0\0\0"
        );
    }
}
