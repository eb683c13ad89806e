//! Files that survive a power cut: written whole beside their target, synced,
//! renamed into place, and the rename synced.
//!
//! blackout keeps files that a later run trusts: traces, saved block
//! recordings, shard parts, the baseline a CI ratchet compares with. Each is
//! written the way blackout tells its users to write theirs
//! ([`write_durably`]): a power cut at any moment leaves the old file whole or
//! the new one whole, and once the call returns the new one stays.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("baseline.tsv");
//! blackout_sys::durable::write_durably(&path, 0o644, |w| {
//!     std::io::Write::write_all(w, b"save\tposix\tPASS\t-\n")
//! })
//! .unwrap();
//! assert_eq!(std::fs::read(&path).unwrap(), b"save\tposix\tPASS\t-\n");
//! ```

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The directory a file path names its file in (`.` for a bare name).
///
/// ```
/// use std::path::Path;
/// use blackout_sys::durable::dir_of;
/// assert_eq!(dir_of(Path::new("run.trace")), Path::new("."));
/// assert_eq!(dir_of(Path::new("out/run.trace")), Path::new("out"));
/// ```
pub fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes the file at `path` durably, with permission bits `mode` (less the
/// umask): `write` fills a new file beside it, which is flushed and fsynced,
/// renamed over `path`, and then `path`'s directory is fsynced.
///
/// Until the rename, `path` holds what it held (nothing, or the old file);
/// after a power cut at any moment it holds the old file or the new one,
/// whole; once this returns `Ok`, the new one. On an error the new file is
/// removed and `path` is untouched.
///
/// # Errors
///
/// Creating, writing or syncing the new file, the rename, or syncing the
/// directory.
pub fn write_durably(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut BufWriter<&mut File>) -> io::Result<()>,
) -> io::Result<()> {
    let dir = dir_of(path);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.as_deref().unwrap_or("blackout")))
        .suffix(".new")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    let mut w = BufWriter::new(tmp.as_file_mut());
    write(&mut w)?;
    w.flush()?;
    drop(w);
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename is an entry of the directory: durable once it is synced.
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.tsv");
        std::fs::write(&path, "old\n").unwrap();
        write_durably(&path, 0o640, |w| w.write_all(b"new\n")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        // The umask may take bits away, never add them.
        assert_eq!(mode & !0o640, 0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.trace");
        std::fs::write(&path, "old\n").unwrap();
        let err = write_durably(&path, 0o644, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(std::fs::read(&path).unwrap(), b"old\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_bare_name_is_written_in_the_working_directory_s_terms() {
        assert_eq!(dir_of(Path::new("x")), Path::new("."));
        assert_eq!(dir_of(Path::new("/x")), Path::new("/"));
    }
}
