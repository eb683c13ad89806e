//! Scratch directories: where crash states are written for checking, and
//! removing a tree whatever a checker did to it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where crash states are written for checking when not told: `$TMPDIR` if
/// set, else `/dev/shm` (memory: writing and removing thousands of small
/// states there costs a fraction of what it costs on a journaled disk file
/// system), else the system temp dir.
pub fn default_scratch_parent() -> PathBuf {
    if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
        return std::env::temp_dir();
    }
    let shm = Path::new("/dev/shm");
    let writable = rustix::fs::access(
        shm,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok();
    if shm.is_dir() && writable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Removes a tree, making directories writable first if removal fails (a
/// checker may chmod what it was given). Never follows symlinks.
pub fn remove_tree(root: &Path) -> io::Result<()> {
    match fs::remove_dir_all(root) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(root);
            fs::remove_dir_all(root)
        }
    }
}

/// Makes every directory under `root` writable and searchable by its owner,
/// iteratively (the tree is a checker's: any depth), never following a
/// symlink.
fn make_writable(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));
        if let Ok(rd) = fs::read_dir(&dir) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn removes_trees_a_checker_made_read_only() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("s");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/b/f"), b"x").unwrap();
        fs::set_permissions(root.join("a/b"), fs::Permissions::from_mode(0o500)).unwrap();
        fs::set_permissions(root.join("a"), fs::Permissions::from_mode(0o500)).unwrap();
        remove_tree(&root).unwrap();
        assert!(!root.exists());
        remove_tree(&root).unwrap();
    }
}
