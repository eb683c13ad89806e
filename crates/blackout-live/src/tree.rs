//! Real trees on disk: a backing directory read into inodes (hard links
//! found), copied (the view a mount starts from, a move between file
//! systems), never following a symlink.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use blackout_oplog::ops::{Ino, InodeKind, Name, ROOT_INO};

/// A fifo, a unix socket or a device node: an entry with no data of its
/// own (its kind is [`InodeKind::File`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Special {
    /// Its file type bits (`S_IFIFO`, `S_IFSOCK`, `S_IFCHR`, `S_IFBLK`).
    pub file_type: u32,
    /// A device node's number.
    pub rdev: u64,
}

/// What an inode is made with: its kind, mode bits, owner, and a symlink's
/// target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// File, directory or symlink (a fifo, socket or device is a file with
    /// `special` set).
    pub kind: InodeKind,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// A symlink's target (empty otherwise).
    pub target: Vec<u8>,
    /// What a fifo, socket or device node is.
    pub special: Option<Special>,
}

/// One inode of a scanned tree.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// How it is made.
    pub meta: Meta,
    /// The entries naming it (none for the root).
    pub names: Vec<(Ino, Name)>,
    /// A directory's entries.
    pub entries: BTreeMap<Name, Ino>,
}

fn kind_of(md: &fs::Metadata) -> (InodeKind, Option<Special>) {
    let t = md.file_type();
    if t.is_dir() {
        (InodeKind::Dir, None)
    } else if t.is_symlink() {
        (InodeKind::Symlink, None)
    } else if t.is_file() {
        (InodeKind::File, None)
    } else {
        let special = Special {
            file_type: md.mode() & libc::S_IFMT,
            rdev: md.rdev(),
        };
        (InodeKind::File, Some(special))
    }
}

/// The metadata of the inode at `path` (not followed).
///
/// # Errors
///
/// `lstat`, `readlink`.
pub fn meta_of(path: &Path) -> io::Result<Meta> {
    let md = fs::symlink_metadata(path)?;
    let (kind, special) = kind_of(&md);
    let target = if kind == InodeKind::Symlink {
        fs::read_link(path)?.as_os_str().as_bytes().to_vec()
    } else {
        Vec::new()
    };
    Ok(Meta {
        kind,
        mode: md.mode() & 0o7777,
        uid: md.uid(),
        gid: md.gid(),
        target,
        special,
    })
}

/// Reads the tree at `root` into inodes (the root is inode 0, the rest
/// numbered as met; hard links are one inode), and copies it to `copy`
/// (which must not exist) when given.
///
/// # Errors
///
/// Reading or copying.
pub fn scan(root: &Path, copy: Option<&Path>) -> io::Result<Vec<Scanned>> {
    let root_meta = meta_of(root)?;
    if root_meta.kind != InodeKind::Dir {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a directory", root.display()),
        ));
    }
    let mut nodes = vec![Scanned {
        meta: root_meta,
        names: Vec::new(),
        entries: BTreeMap::new(),
    }];
    if let Some(c) = copy {
        fs::create_dir(c)?;
    }
    // Each hard-linked inode met, and where its first name was copied.
    let mut seen: HashMap<(u64, u64), (Ino, Option<PathBuf>)> = HashMap::new();
    let mut dirs = vec![(ROOT_INO, root.to_path_buf(), copy.map(Path::to_path_buf))];
    // Every path reached however deep it is (`reach`).
    while let Some((dir, path, to)) = dirs.pop() {
        let mut names: Vec<_> = fs::read_dir(&*reach(path.clone())?)?
            .map(|e| e.map(|e| e.file_name()))
            .collect::<io::Result<_>>()?;
        names.sort();
        for name in names {
            let p = path.join(&name);
            let rp = reach(p.clone())?;
            let md = fs::symlink_metadata(&*rp)?;
            let key = (md.dev(), md.ino());
            let n = Name(name.as_bytes().to_vec());
            let dest = to.as_ref().map(|t| t.join(&name));
            if let Some((ino, first)) = seen.get(&key) {
                let ino = *ino;
                // A hard link: one inode, another name.
                if let (Some(first), Some(d)) = (first, &dest) {
                    fs::hard_link(&*reach(first.clone())?, &*reach(d.clone())?)?;
                }
                nodes[ino as usize].names.push((dir, n.clone()));
                nodes[dir as usize].entries.insert(n, ino);
                continue;
            }
            let meta = meta_of(&rp)?;
            let ino = Ino::try_from(nodes.len())
                .map_err(|_| io::Error::other("more than 2^32 inodes"))?;
            if meta.kind != InodeKind::Dir && md.nlink() > 1 {
                seen.insert(key, (ino, dest.clone()));
            }
            if let Some(d) = &dest {
                make(&reach(d.clone())?, &meta, Some(&rp))?;
            }
            let kind = meta.kind;
            nodes.push(Scanned {
                meta,
                names: vec![(dir, n.clone())],
                entries: BTreeMap::new(),
            });
            nodes[dir as usize].entries.insert(n, ino);
            if kind == InodeKind::Dir {
                dirs.push((ino, p, dest));
            }
        }
        if let Some(t) = &to {
            let t = reach(t.clone())?;
            finish(&t, &nodes[dir as usize].meta)?;
            copy_attrs(&reach(path.clone())?, &t);
        }
    }
    Ok(nodes)
}

/// Makes an inode at `path` as `meta` says: a file (with `from`'s bytes
/// when given), a directory (its mode set by [`finish`] once filled), or a
/// symlink.
///
/// # Errors
///
/// The calls that make it.
pub fn make(path: &Path, meta: &Meta, from: Option<&Path>) -> io::Result<()> {
    match (meta.kind, meta.special) {
        (_, Some(sp)) => {
            // Never copied (a fifo would block): made again, as it is.
            rustix::fs::mknodat(
                rustix::fs::CWD,
                path,
                rustix::fs::FileType::from_raw_mode(sp.file_type),
                rustix::fs::Mode::from_raw_mode(meta.mode),
                sp.rdev,
            )?;
            finish(path, meta)?;
        }
        (InodeKind::File, None) => {
            match from {
                Some(f) => {
                    fs::copy(f, path)?;
                }
                None => {
                    fs::File::create_new(path)?;
                }
            }
            finish(path, meta)?;
        }
        // Its mode, times and attributes once it is filled (`scan`).
        (InodeKind::Dir, None) => return fs::create_dir(path),
        (InodeKind::Symlink, None) => {
            std::os::unix::fs::symlink(OsStr::from_bytes(&meta.target), path)?;
            chown(path, meta);
        }
    }
    if let Some(f) = from {
        copy_attrs(f, path);
    }
    Ok(())
}

/// Gives the inode at `to` the extended attributes and the access and
/// modification times of the one at `from` (neither followed), as far as
/// `to`'s file system keeps them.
pub fn copy_attrs(from: &Path, to: &Path) {
    let mut names = vec![0u8; 64 * 1024];
    if let Ok(n) = rustix::fs::llistxattr(from, &mut names[..]) {
        let mut value = vec![0u8; 64 * 1024];
        for name in names[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
            let name = OsStr::from_bytes(name);
            if let Ok(len) = rustix::fs::lgetxattr(from, name, &mut value[..]) {
                let flags = rustix::fs::XattrFlags::empty();
                let _ = rustix::fs::lsetxattr(to, name, &value[..len], flags);
            }
        }
    }
    if let Ok(md) = fs::symlink_metadata(from) {
        let at = |secs: i64, nsecs: i64| rustix::fs::Timespec {
            tv_sec: secs,
            tv_nsec: nsecs as _,
        };
        let times = rustix::fs::Timestamps {
            last_access: at(md.atime(), md.atime_nsec()),
            last_modification: at(md.mtime(), md.mtime_nsec()),
        };
        let nofollow = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
        let _ = rustix::fs::utimensat(rustix::fs::CWD, to, &times, nofollow);
    }
}

/// Makes an empty inode at `path` as `meta` says, its mode and owner set at
/// once (a directory's too: nothing is to be put in it first).
///
/// # Errors
///
/// The calls that make it.
pub fn make_empty(path: &Path, meta: &Meta) -> io::Result<()> {
    make(path, meta, None)?;
    if meta.kind == InodeKind::Dir {
        finish(path, meta)?;
    }
    Ok(())
}

/// Sets a made inode's mode and (as root) owner.
///
/// # Errors
///
/// chmod.
pub fn finish(path: &Path, meta: &Meta) -> io::Result<()> {
    chown(path, meta);
    if meta.kind != InodeKind::Symlink {
        fs::set_permissions(path, fs::Permissions::from_mode(meta.mode))?;
    }
    Ok(())
}

/// Sets the owner when this process may (as root); never follows a
/// symlink.
fn chown(path: &Path, meta: &Meta) {
    if rustix::process::geteuid().is_root() {
        let _ = std::os::unix::fs::lchown(path, Some(meta.uid), Some(meta.gid));
    }
}

/// Copies the tree at `from` to `to` (which must not exist), hard links
/// inside it kept.
///
/// # Errors
///
/// Reading or writing.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let meta = meta_of(from)?;
    if meta.kind == InodeKind::Dir {
        scan(from, Some(to)).map(|_| ())
    } else {
        make(to, &meta, Some(from))
    }
}

/// Moves the tree at `from` to `to` (which must not exist): a rename on
/// one file system, else a copy and a removal. A copy that fails (a full
/// disk) leaves nothing at `to` and `from` as it was.
///
/// # Errors
///
/// The rename, the copy or the removal.
pub fn move_tree(from: &Path, to: &Path, same_fs: bool) -> io::Result<()> {
    if same_fs {
        return fs::rename(from, to);
    }
    if let Err(e) = copy_tree(from, to) {
        if fs::symlink_metadata(to).is_ok() {
            let _ = remove(to);
        }
        return Err(e);
    }
    remove(from)
}

/// Removes the inode at `path` (a directory with everything in it).
///
/// # Errors
///
/// The removal.
pub fn remove(path: &Path) -> io::Result<()> {
    let md = fs::symlink_metadata(path)?;
    if md.is_dir() {
        blackout_sys::scratch::remove_tree(path)
    } else {
        fs::remove_file(path)
    }
}

/// The longest path this module hands to a call whole; a longer one is
/// reached through its directory held open (PATH_MAX is 4096 with the NUL,
/// and the view's or the backing directory's own prefix comes before the
/// path a program gave, so a path the program could use may not fit).
const PATH_BYTES_MAX: usize = 4000;

/// A path any call can take, however long the path it stands for: the path
/// itself when it fits, else `/proc/self/fd/N/NAME` with its directory held
/// open as `N` (opened a piece at a time).
#[derive(Debug)]
pub struct Reach {
    path: PathBuf,
    _dir: Option<std::os::fd::OwnedFd>,
}

impl std::ops::Deref for Reach {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Reach {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// `path` made reachable by any call ([`Reach`]).
///
/// # Errors
///
/// Opening a directory on the way (`ENOENT`, `ENOTDIR`, `EACCES`).
pub fn reach(path: PathBuf) -> io::Result<Reach> {
    if path.as_os_str().len() < PATH_BYTES_MAX {
        return Ok(Reach { path, _dir: None });
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(Reach { path, _dir: None });
    };
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir: Option<std::os::fd::OwnedFd> = None;
    let mut piece = PathBuf::new();
    let open = |piece: &Path, dir: &mut Option<std::os::fd::OwnedFd>| -> io::Result<()> {
        let fd = match dir.as_ref() {
            Some(d) => rustix::fs::openat(d, piece, flags, Mode::empty())?,
            None => rustix::fs::openat(rustix::fs::CWD, piece, flags, Mode::empty())?,
        };
        *dir = Some(fd);
        Ok(())
    };
    for c in parent.components() {
        let c = c.as_os_str();
        if piece.as_os_str().len() + c.len() + 1 >= PATH_BYTES_MAX {
            open(&piece, &mut dir)?;
            piece = PathBuf::new();
        }
        piece.push(c);
    }
    if !piece.as_os_str().is_empty() {
        open(&piece, &mut dir)?;
    }
    let dir = dir.expect("a long path has a directory");
    use std::os::fd::AsRawFd;
    let path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
    Ok(Reach {
        path,
        _dir: Some(dir),
    })
}

/// Whether two paths are on one file system (a rename between them works).
pub fn same_fs(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_longer_than_a_call_takes_is_reached_through_its_directory() {
        let t = tempfile::tempdir().unwrap();
        let mut deep = t.path().to_path_buf();
        // 24 directories of 200 bytes: 4,800 bytes and more.
        for i in 0..24 {
            let name = format!("{i:0>200}");
            let r = reach(deep.join(&name)).unwrap();
            fs::create_dir(&*r).unwrap();
            deep.push(name);
        }
        assert!(deep.as_os_str().len() > 4800);
        let file = reach(deep.join("f")).unwrap();
        assert!(file.starts_with("/proc/self/fd/"), "{}", file.display());
        fs::write(&*file, b"deep").unwrap();
        assert_eq!(fs::read(&*reach(deep.join("f")).unwrap()).unwrap(), b"deep");
        let short = reach(t.path().join("x")).unwrap();
        assert_eq!(&*short, t.path().join("x"));
    }

    #[test]
    fn a_scan_finds_hard_links_and_a_copy_keeps_them() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        fs::create_dir_all(src.join("d")).unwrap();
        fs::write(src.join("d/a"), b"hello").unwrap();
        fs::hard_link(src.join("d/a"), src.join("b")).unwrap();
        std::os::unix::fs::symlink("d/a", src.join("l")).unwrap();
        let nodes = scan(&src, Some(&t.path().join("copy"))).unwrap();
        assert_eq!(nodes.len(), 4, "root, d, a (two names), l");
        let a = nodes.iter().find(|n| n.names.len() == 2).unwrap();
        assert_eq!(a.meta.kind, InodeKind::File);
        let c = t.path().join("copy");
        assert_eq!(fs::read(c.join("d/a")).unwrap(), b"hello");
        let (x, y) = (
            fs::metadata(c.join("d/a")).unwrap(),
            fs::metadata(c.join("b")).unwrap(),
        );
        assert_eq!(x.ino(), y.ino());
        assert_eq!(fs::read_link(c.join("l")).unwrap(), Path::new("d/a"));
    }

    #[test]
    fn a_fifo_is_scanned_and_copied_as_a_fifo_never_opened() {
        use std::os::unix::fs::FileTypeExt;
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        fs::create_dir(&src).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            src.join("pipe"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let copy = t.path().join("copy");
        // Opening it to copy it would block: it is made again.
        let scanned = scan(&src, Some(&copy)).unwrap();
        let special = scanned[1].meta.special.unwrap();
        assert_eq!(special.file_type, libc::S_IFIFO);
        let md = fs::symlink_metadata(copy.join("pipe")).unwrap();
        assert!(md.file_type().is_fifo());
        assert_eq!(md.mode() & 0o7777, 0o600);
    }
}
