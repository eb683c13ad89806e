//! Reading the directory under test into a [`Tree`] before the workload
//! runs, and copying an `--init` tree into it.
//!
//! Both walk real directories that a user or a `--setup` command made, so
//! both are iterative (an explicit stack, no recursion however deep the tree)
//! and neither follows a symbolic link.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use blackout_oplog::ops::{Ino, Name, ROOT_INO};
use blackout_oplog::tree::{Entry, Node, Tree};

/// The most file bytes a snapshot takes in.
pub const SNAPSHOT_BYTES_MAX: u64 = 1 << 30;

/// The names in a directory, sorted.
fn sorted_names(dir: &Path) -> io::Result<std::vec::IntoIter<OsString>> {
    let mut names: Vec<OsString> = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    Ok(names.into_iter())
}

/// Reads a directory without following symbolic links. Hard links share an
/// inode. Anything but regular files, directories and symlinks is refused.
/// Inodes are numbered depth first, names in sorted order.
pub fn snapshot(root: &Path) -> io::Result<Tree> {
    let mut tree = Tree::default();
    let mut seen: HashMap<(u64, u64), Ino> = HashMap::new();
    let mut bytes = 0u64;
    let mut stack = vec![(root.to_path_buf(), ROOT_INO, sorted_names(root)?)];
    while let Some((dir, dir_ino, names)) = stack.last_mut() {
        let Some(name) = names.next() else {
            stack.pop();
            continue;
        };
        let (dir, dir_ino) = (dir.clone(), *dir_ino);
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
        let node = read_node(&path, &meta, &mut bytes)?;
        let is_dir = node == Node::Dir;
        seen.insert(key, ino);
        tree.nodes.push(node);
        tree.entries.push(Entry {
            dir: dir_ino,
            name,
            ino,
        });
        if is_dir {
            let names = sorted_names(&path)?;
            stack.push((path, ino, names));
        }
    }
    Ok(tree)
}

/// One inode of the snapshot, counting file bytes against the limit.
fn read_node(path: &Path, meta: &fs::Metadata, bytes: &mut u64) -> io::Result<Node> {
    let ft = meta.file_type();
    if ft.is_dir() {
        Ok(Node::Dir)
    } else if ft.is_symlink() {
        let target = fs::read_link(path)?;
        Ok(Node::Symlink(
            std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec(),
        ))
    } else if ft.is_file() {
        *bytes += meta.len();
        if *bytes > SNAPSHOT_BYTES_MAX {
            return Err(io::Error::other(format!(
                "{}: the initial tree holds more than {} bytes",
                path.display(),
                SNAPSHOT_BYTES_MAX
            )));
        }
        Ok(Node::File(fs::read(path)?))
    } else {
        Err(io::Error::other(format!(
            "{}: not a regular file, directory or symlink",
            path.display()
        )))
    }
}

/// Copies a directory tree (for `--init`): regular files with their mode,
/// directories and symlinks as links (never followed). Refuses special files.
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let mut stack: Vec<(PathBuf, PathBuf, std::vec::IntoIter<OsString>)> =
        vec![(from.to_path_buf(), to.to_path_buf(), sorted_names(from)?)];
    while let Some((src_dir, dst_dir, names)) = stack.last_mut() {
        let Some(name) = names.next() else {
            stack.pop();
            continue;
        };
        let src = src_dir.join(&name);
        let dst = dst_dir.join(&name);
        let meta = fs::symlink_metadata(&src)?;
        let ft = meta.file_type();
        if ft.is_dir() {
            fs::create_dir(&dst)?;
            let names = sorted_names(&src)?;
            stack.push((src, dst, names));
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
        let tree = snapshot(d).unwrap();
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

    #[test]
    fn nested_directories_are_numbered_depth_first_and_copied() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("src");
        fs::create_dir_all(d.join("a/b")).unwrap();
        fs::write(d.join("a/b/f"), b"x").unwrap();
        fs::write(d.join("c"), b"y").unwrap();
        let tree = snapshot(&d).unwrap();
        let names: Vec<&[u8]> = tree.entries.iter().map(|e| e.name.0.as_slice()).collect();
        assert_eq!(names, [&b"a"[..], b"b", b"f", b"c"]);
        let copy = t.path().join("copy");
        fs::create_dir(&copy).unwrap();
        copy_tree(&d, &copy).unwrap();
        assert_eq!(snapshot(&copy).unwrap(), tree);
    }
}
