//! Scratch directories: where crash states are written for checking,
//! removing a tree whatever a checker did to it, and the scratch that runs
//! killed outright (SIGKILL: an OOM kill, a CI timeout) left behind.
//!
//! Every scratch directory blackout makes is marked with its owner
//! ([`mark_owned`]: the process id, its start time and its pid namespace).
//! [`stale`] finds the `blackout-*` directories whose owner is gone (no
//! such process, or another one under the same pid); [`clean_stale`]
//! detaches what is still mounted under them and removes them. A directory
//! with no mark, or marked from another pid namespace, is never judged.

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

/// The file in a scratch directory that names its owner.
pub const OWNER_FILE: &str = ".blackout-owner";

/// The identity of process `pid`, if it runs: its start time (clock ticks
/// since boot) and pid namespace.
fn owner_of(pid: u32) -> Option<(u64, String)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields follow the
    // last `)`; the start time is field 22, the 20th after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let start = rest.split_whitespace().nth(19)?.parse().ok()?;
    let ns = fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    Some((start, ns.to_string_lossy().into_owned()))
}

/// Marks `dir` as this process's scratch (written whole or not at all).
///
/// # Errors
///
/// Writing the mark.
pub fn mark_owned(dir: &Path) -> io::Result<()> {
    let pid = std::process::id();
    let (start, ns) =
        owner_of(pid).ok_or_else(|| io::Error::other("cannot read this process's /proc entry"))?;
    let tmp = dir.join(format!("{OWNER_FILE}.tmp"));
    fs::write(&tmp, format!("{pid} {start} {ns}\n"))?;
    fs::rename(&tmp, dir.join(OWNER_FILE))
}

/// Whether the owner `dir`'s mark names is gone: `None` when it cannot be
/// judged (no mark, a damaged one, another pid namespace).
fn owner_gone(dir: &Path) -> Option<bool> {
    let text = fs::read_to_string(dir.join(OWNER_FILE)).ok()?;
    let mut f = text.split_whitespace();
    let pid: u32 = f.next()?.parse().ok()?;
    let start: u64 = f.next()?.parse().ok()?;
    let ns = f.next()?;
    let ours = fs::read_link("/proc/self/ns/pid").ok()?;
    if ours.to_string_lossy() != ns {
        return None;
    }
    Some(owner_of(pid).is_none_or(|(s, n)| s != start || n != ns))
}

/// The `blackout-*` directories directly under `parent` whose owner is
/// gone (symlinks are never followed).
pub fn stale(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("blackout-"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|d| owner_gone(d) == Some(true))
        .collect();
    out.sort();
    out
}

/// Mount points at or under `dir`, deepest first (from
/// `/proc/self/mountinfo`, whose paths escape space, tab, newline and
/// backslash in octal).
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut found: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|m| {
            let b = m.as_bytes();
            let mut out = Vec::with_capacity(b.len());
            let mut i = 0;
            while i < b.len() {
                let octal = b
                    .get(i + 1..i + 4)
                    .and_then(|o| u8::from_str_radix(std::str::from_utf8(o).ok()?, 8).ok());
                match (b[i], octal) {
                    (b'\\', Some(c)) => {
                        out.push(c);
                        i += 4;
                    }
                    (c, _) => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            PathBuf::from(std::ffi::OsString::from_vec(out))
        })
        .filter(|m| m.starts_with(dir))
        .collect();
    found.sort_by_key(|m| std::cmp::Reverse(m.components().count()));
    found
}

/// Removes every stale scratch directory under `parent` ([`stale`]),
/// first detaching whatever is still mounted under it (a killed block
/// run's file system and FUSE mount): each directory with what removing it
/// gave.
pub fn clean_stale(parent: &Path) -> Vec<(PathBuf, io::Result<()>)> {
    stale(parent)
        .into_iter()
        .map(|dir| {
            for m in mounts_under(&dir) {
                let _ = rustix::mount::unmount(&m, rustix::mount::UnmountFlags::DETACH);
            }
            let removed = remove_tree(&dir);
            (dir, removed)
        })
        .collect()
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

    #[test]
    fn only_directories_whose_owner_is_gone_are_stale() {
        let t = tempfile::tempdir().unwrap();
        let mine = t.path().join("blackout-mine");
        let gone = t.path().join("blackout-gone");
        let unmarked = t.path().join("blackout-unmarked");
        let other = t.path().join("not-ours");
        for d in [&mine, &gone, &unmarked, &other] {
            fs::create_dir(d).unwrap();
        }
        mark_owned(&mine).unwrap();
        mark_owned(&other).unwrap();
        // A child that exits: its pid names no process (or a later one).
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let mut child = child;
        child.wait().unwrap();
        let ns = fs::read_link("/proc/self/ns/pid").unwrap();
        let mark = format!("{pid} 1 {}\n", ns.display());
        fs::write(gone.join(OWNER_FILE), &mark).unwrap();
        fs::write(other.join(OWNER_FILE), &mark).unwrap();
        assert_eq!(stale(t.path()), std::slice::from_ref(&gone));
        // Another pid namespace is never judged.
        fs::write(gone.join(OWNER_FILE), format!("{pid} 1 pid:[1]\n")).unwrap();
        assert!(stale(t.path()).is_empty());
        fs::write(gone.join(OWNER_FILE), &mark).unwrap();
        let cleaned = clean_stale(t.path());
        assert_eq!(cleaned.len(), 1);
        assert!(cleaned[0].1.is_ok());
        assert!(!gone.exists() && mine.exists() && unmarked.exists() && other.exists());
    }
}
