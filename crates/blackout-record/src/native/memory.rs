//! Reading a stopped tracee: its memory with `process_vm_readv` (falling
//! back to `/proc/PID/mem`), C strings page by page, iovec arrays, and the
//! path an fd names, as strace's `-y` shows it.

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

/// The longest path or symlink target the kernel takes, with its NUL.
pub(super) const PATH_BYTES_MAX: usize = 4096;

/// The most iovecs one call takes (`IOV_MAX`).
const IOVECS_MAX: u64 = 1024;

const PAGE: u64 = 4096;

/// `len` bytes at `addr` in thread `pid`'s memory.
pub(super) fn read_bytes(pid: i32, addr: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let got = vm_read(pid, &mut buf, &[(addr, len)]).or_else(|_| mem_read(pid, addr, &mut buf))?;
    if got < len {
        let rest = mem_read(pid, addr + got as u64, &mut buf[got..])?;
        if got + rest < len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("only {} of {len} bytes could be read", got + rest),
            ));
        }
    }
    Ok(buf)
}

/// A NUL-terminated string at `addr`, without its NUL, read a page at a
/// time (a string may end just before an unmapped page).
pub(super) fn read_cstr(pid: i32, addr: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = addr;
    while out.len() < PATH_BYTES_MAX {
        let chunk = (PAGE - at % PAGE) as usize;
        let bytes = read_bytes(pid, at, chunk)?;
        if let Some(nul) = memchr::memchr(0, &bytes) {
            out.extend_from_slice(&bytes[..nul]);
            return Ok(out);
        }
        out.extend_from_slice(&bytes);
        at += chunk as u64;
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "no NUL within the longest path the kernel takes",
    ))
}

/// A little-endian word at `addr`.
pub(super) fn read_u64(pid: i32, addr: u64) -> io::Result<u64> {
    let b = read_bytes(pid, addr, 8)?;
    let mut w = [0u8; 8];
    w.copy_from_slice(&b);
    Ok(u64::from_le_bytes(w))
}

/// The first `total` bytes of the `count` buffers an iovec array at `addr`
/// describes.
pub(super) fn read_iovecs(pid: i32, addr: u64, count: u64, total: u64) -> io::Result<Vec<u8>> {
    if count > IOVECS_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "more iovecs than a call takes",
        ));
    }
    let raw = read_bytes(pid, addr, count as usize * 16)?;
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0).min(1 << 30));
    for iov in raw.chunks_exact(16) {
        let left = total - out.len() as u64;
        if left == 0 {
            break;
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&iov[..8]);
        let base = u64::from_le_bytes(w);
        w.copy_from_slice(&iov[8..]);
        let len = u64::from_le_bytes(w).min(left);
        if len > 0 {
            out.extend(read_bytes(pid, base, len as usize)?);
        }
    }
    Ok(out)
}

/// The path fd `fd` of thread `pid` names, as `/proc/PID/fd/N` links to it
/// (strace's `-y`), without a ` (deleted)` mark; `None` when the fd is not
/// open.
pub(super) fn fd_path(pid: i32, fd: i64) -> Option<Vec<u8>> {
    let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok()?;
    let bytes = link.as_os_str().as_bytes();
    Some(bytes.strip_suffix(b" (deleted)").unwrap_or(bytes).to_vec())
}

/// `process_vm_readv` into `buf` from the ranges given; how many bytes
/// came.
fn vm_read(pid: i32, buf: &mut [u8], ranges: &[(u64, usize)]) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote: Vec<libc::iovec> = ranges
        .iter()
        .map(|&(a, l)| libc::iovec {
            iov_base: a as usize as *mut libc::c_void,
            iov_len: l,
        })
        .collect();
    // SAFETY: `local` covers `buf`, which outlives the call; the remote
    // ranges are only read, in the other process.
    let n = unsafe {
        libc::process_vm_readv(
            pid,
            &local,
            1,
            remote.as_ptr(),
            remote.len() as libc::c_ulong,
            0,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Reads through `/proc/PID/mem` (where `process_vm_readv` is refused).
fn mem_read(pid: i32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mem = std::fs::File::open(format!("/proc/{pid}/mem"))?;
    let mut done = 0;
    while done < buf.len() {
        match mem.read_at(&mut buf[done..], addr + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if done > 0 => {
                let _ = e;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_memory() {
        let me = std::process::id() as i32;
        let text = b"hello\0world".to_vec();
        let addr = text.as_ptr() as u64;
        assert_eq!(read_bytes(me, addr, 5).unwrap(), b"hello");
        assert_eq!(read_cstr(me, addr).unwrap(), b"hello");
        let parts = [&text[..2], &text[2..5]];
        let iov: Vec<u64> = parts
            .iter()
            .flat_map(|p| [p.as_ptr() as u64, p.len() as u64])
            .collect();
        let got = read_iovecs(me, iov.as_ptr() as u64, 2, 4).unwrap();
        assert_eq!(got, b"hell");
        let word = 0x0102_0304_0506_0708u64;
        assert_eq!(read_u64(me, &word as *const u64 as u64).unwrap(), word);
    }

    #[test]
    fn names_an_fds_path() {
        let f = tempfile::NamedTempFile::new().unwrap();
        use std::os::fd::AsRawFd;
        let fd = i64::from(f.as_file().as_raw_fd());
        let path = fd_path(std::process::id() as i32, fd).unwrap();
        let want = std::fs::canonicalize(f.path()).unwrap();
        assert_eq!(path, want.as_os_str().as_bytes());
        assert_eq!(fd_path(std::process::id() as i32, 999_999), None);
    }
}
