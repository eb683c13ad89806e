//! The backing directory's limits, which are the mount's: the largest file
//! and the longest name its file system takes. The view (in scratch, often
//! a tmpfs) would accept more; a request past them is refused at the call
//! with the error the backing file system gives, never accepted in the view
//! and refused later, when a sync makes it durable.

use std::io;
use std::path::Path;

/// What the backing file system takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest size a file may have, in bytes (a write or fallocate
    /// ending past it, or a truncate to more, is `EFBIG`).
    pub file_bytes_max: u64,
    /// The longest name, in bytes (`ENAMETOOLONG` past it).
    pub name_bytes_max: usize,
    /// Whether it keeps extended attributes (`user.*`; else setting one
    /// is `EOPNOTSUPP`).
    pub xattrs: bool,
    /// The most names a file may have (`EMLINK` past it).
    pub links_max: u64,
}

impl Limits {
    /// The backing directory's limits, measured: the largest size an
    /// unnamed file in it can be truncated to (found by halving, on a file
    /// with no blocks, so nothing is written), and the name length its
    /// file system reports.
    ///
    /// # Errors
    ///
    /// Making the probe file, or `statvfs`.
    pub fn probe(backing: &Path) -> io::Result<Limits> {
        let file = tempfile::tempfile_in(backing)?;
        let fits = |size: u64| file.set_len(size).is_ok();
        let file_bytes_max = if fits(i64::MAX as u64) {
            i64::MAX as u64
        } else {
            // fits(lo) holds and fits(hi) does not.
            let (mut lo, mut hi) = (0u64, i64::MAX as u64);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        file.set_len(0)?;
        let xattrs = rustix::fs::fsetxattr(
            &file,
            "user.blackout.probe",
            b"1",
            rustix::fs::XattrFlags::empty(),
        )
        .is_ok();
        let vfs = rustix::fs::statvfs(backing)?;
        Ok(Limits {
            file_bytes_max,
            name_bytes_max: usize::try_from(vfs.f_namemax).unwrap_or(usize::MAX),
            xattrs,
            links_max: links_max(backing),
        })
    }

    /// `EFBIG` when a file would end past the largest size.
    ///
    /// ```
    /// use blackout_live::limits::Limits;
    /// let l = Limits { file_bytes_max: 100, name_bytes_max: 255, xattrs: true, links_max: 8 };
    /// assert_eq!(l.size(90, 10), Ok(()));
    /// assert_eq!(l.size(90, 11), Err(libc::EFBIG));
    /// assert_eq!(l.size(u64::MAX, 1), Err(libc::EFBIG));
    /// ```
    pub fn size(&self, off: u64, len: u64) -> Result<(), i32> {
        match off.checked_add(len) {
            Some(end) if end <= self.file_bytes_max => Ok(()),
            _ => Err(libc::EFBIG),
        }
    }

    /// `EMLINK` when a file with `nlink` names may have no more.
    ///
    /// ```
    /// use blackout_live::limits::Limits;
    /// let l = Limits { file_bytes_max: 100, name_bytes_max: 255, xattrs: true, links_max: 2 };
    /// assert_eq!(l.link(1), Ok(()));
    /// assert_eq!(l.link(2), Err(libc::EMLINK));
    /// ```
    pub fn link(&self, nlink: u64) -> Result<(), i32> {
        if nlink >= self.links_max {
            Err(libc::EMLINK)
        } else {
            Ok(())
        }
    }

    /// `EOPNOTSUPP` when the file system keeps no extended attributes.
    pub fn xattrs(&self) -> Result<(), i32> {
        if self.xattrs {
            Ok(())
        } else {
            Err(libc::EOPNOTSUPP)
        }
    }

    /// `ENAMETOOLONG` for a name longer than the file system takes.
    ///
    /// ```
    /// use blackout_live::limits::Limits;
    /// let l = Limits { file_bytes_max: 100, name_bytes_max: 3, xattrs: true, links_max: 8 };
    /// assert_eq!(l.name(b"abc"), Ok(()));
    /// assert_eq!(l.name(b"abcd"), Err(libc::ENAMETOOLONG));
    /// ```
    pub fn name(&self, name: &[u8]) -> Result<(), i32> {
        if name.len() > self.name_bytes_max {
            Err(libc::ENAMETOOLONG)
        } else {
            Ok(())
        }
    }
}

/// The most names a file in `dir`'s file system may have (`pathconf`
/// `_PC_LINK_MAX`), unbounded where it does not say.
fn links_max(dir: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return u64::MAX;
    };
    // SAFETY: a NUL-terminated path; pathconf reads it only.
    let n = unsafe { libc::pathconf(c.as_ptr(), libc::_PC_LINK_MAX) };
    u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_system_s_largest_file_is_found_and_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let l = Limits::probe(dir.path()).unwrap();
        // Every Linux file system takes files of a terabyte.
        assert!(l.file_bytes_max >= 1 << 40, "{l:?}");
        let f = tempfile::tempfile_in(dir.path()).unwrap();
        f.set_len(l.file_bytes_max).unwrap();
        if l.file_bytes_max < i64::MAX as u64 {
            assert!(f.set_len(l.file_bytes_max + 1).is_err());
        }
        assert!(l.name_bytes_max >= 255, "{l:?}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
