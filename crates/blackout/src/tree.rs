//! The initial tree: what the directory under test held before the workload
//! ran (after `--init` and `--setup`), treated as durable.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::ops::{Ino, Name, ROOT_INO};

/// One inode of the initial tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A regular file and its bytes.
    File(Vec<u8>),
    /// A directory.
    Dir,
    /// A symbolic link and its target.
    Symlink(Vec<u8>),
}

/// A directory entry of the initial tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The directory.
    pub dir: Ino,
    /// The name in it.
    pub name: Name,
    /// The inode.
    pub ino: Ino,
}

/// A tree of inodes: `nodes[0]` is the directory under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Inodes, indexed by [`Ino`].
    pub nodes: Vec<Node>,
    /// Directory entries, parents before children.
    pub entries: Vec<Entry>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![Node::Dir],
            entries: Vec::new(),
        }
    }
}

/// Limits on what a snapshot takes in.
pub const SNAPSHOT_BYTES_MAX: u64 = 1 << 30;

impl Tree {
    /// Reads a directory without following symbolic links. Hard links share an
    /// inode. Anything but regular files, directories and symlinks is refused.
    pub fn snapshot(root: &Path) -> io::Result<Tree> {
        let mut tree = Tree::default();
        let mut seen: HashMap<(u64, u64), Ino> = HashMap::new();
        let mut bytes = 0u64;
        walk(root, ROOT_INO, &mut tree, &mut seen, &mut bytes)?;
        Ok(tree)
    }

    /// The path of an entry's inode from the root, for display.
    pub fn path_of(&self, ino: Ino) -> Option<Vec<u8>> {
        if ino == ROOT_INO {
            return Some(Vec::new());
        }
        let e = self.entries.iter().find(|e| e.ino == ino)?;
        let mut p = self.path_of(e.dir)?;
        if !p.is_empty() {
            p.push(b'/');
        }
        p.extend_from_slice(&e.name.0);
        Some(p)
    }
}

fn walk(
    dir: &Path,
    dir_ino: Ino,
    tree: &mut Tree,
    seen: &mut HashMap<(u64, u64), Ino>,
    bytes: &mut u64,
) -> io::Result<()> {
    let mut names: Vec<_> = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let meta = fs::symlink_metadata(&path)?;
        let key = (meta.dev(), meta.ino());
        let name = Name(std::os::unix::ffi::OsStrExt::as_bytes(name.as_os_str()).to_vec());
        if let Some(&ino) = seen.get(&key) {
            if !meta.is_dir() {
                tree.entries.push(Entry {
                    dir: dir_ino,
                    name,
                    ino,
                });
                continue;
            }
        }
        let ino = Ino::try_from(tree.nodes.len())
            .map_err(|_| io::Error::other("too many files in the initial tree"))?;
        let ft = meta.file_type();
        let node = if ft.is_dir() {
            Node::Dir
        } else if ft.is_symlink() {
            let target = fs::read_link(&path)?;
            Node::Symlink(std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec())
        } else if ft.is_file() {
            *bytes += meta.len();
            if *bytes > SNAPSHOT_BYTES_MAX {
                return Err(io::Error::other(format!(
                    "{}: the initial tree holds more than {} bytes",
                    path.display(),
                    SNAPSHOT_BYTES_MAX
                )));
            }
            Node::File(fs::read(&path)?)
        } else {
            return Err(io::Error::other(format!(
                "{}: not a regular file, directory or symlink",
                path.display()
            )));
        };
        seen.insert(key, ino);
        tree.nodes.push(node);
        tree.entries.push(Entry {
            dir: dir_ino,
            name,
            ino,
        });
        if ft.is_dir() {
            walk(&path, ino, tree, seen, bytes)?;
        }
    }
    Ok(())
}

/// Copies a directory tree (for `--init`): regular files with their mode,
/// directories and symlinks as links (never followed). Refuses special files.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let mut names: Vec<_> = fs::read_dir(from)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let src = from.join(&name);
        let dst = to.join(&name);
        let meta = fs::symlink_metadata(&src)?;
        let ft = meta.file_type();
        if ft.is_dir() {
            fs::create_dir(&dst)?;
            copy_tree(&src, &dst)?;
        } else if ft.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
        } else if ft.is_file() {
            fs::copy(&src, &dst)?;
            fs::set_permissions(&dst, fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        } else {
            return Err(io::Error::other(format!(
                "{}: not a regular file, directory or symlink",
                src.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_keeps_links_and_does_not_follow_symlinks() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        fs::create_dir(d.join("sub")).unwrap();
        fs::write(d.join("sub/a"), b"hello").unwrap();
        fs::hard_link(d.join("sub/a"), d.join("b")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("out")).unwrap();
        let tree = Tree::snapshot(d).unwrap();
        // root, b (same inode as sub/a), out, sub
        assert_eq!(tree.nodes.len(), 4);
        let ino_b = tree.entries.iter().find(|e| e.name.0 == b"b").unwrap().ino;
        let ino_a = tree.entries.iter().find(|e| e.name.0 == b"a").unwrap().ino;
        assert_eq!(ino_a, ino_b);
        assert_eq!(tree.nodes[ino_a as usize], Node::File(b"hello".to_vec()));
        let out = tree
            .entries
            .iter()
            .find(|e| e.name.0 == b"out")
            .unwrap()
            .ino;
        assert_eq!(tree.nodes[out as usize], Node::Symlink(b"/etc".to_vec()));
        assert_eq!(tree.path_of(ino_a).unwrap(), b"b");
    }
}
