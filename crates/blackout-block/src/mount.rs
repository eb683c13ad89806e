//! Mounting a crash state's image so the file system's own recovery runs:
//! a loop device of its own set up with two ioctls (no `losetup` or `mount`
//! process per state), `mount(2)`, and on the way out `umount(2)`; the loop
//! device is configured to clear itself when the last user lets go, so an
//! unmount (or this process dying) detaches it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::session::FsKind;

/// `LOOP_CTL_GET_FREE` (linux/loop.h): the number of a free loop device,
/// made if there is none.
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
/// `LOOP_CONFIGURE` (linux/loop.h, Linux 5.8): bind a backing file and set
/// the flags in one call.
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
/// `LO_FLAGS_AUTOCLEAR`: the device lets its file go when its last user
/// closes it (the mount holds it while mounted).
const LO_FLAGS_AUTOCLEAR: u32 = 4;
/// Free devices taken by someone else between asking and binding are
/// retried this many times.
const ATTACH_TRIES: usize = 16;

/// How long to wait, one pause after another, for a busy file system to be
/// let go before unmounting it lazily. A file of a state is held a moment
/// after its reader closed it when another thread of this process starts a
/// command just then: the new process holds a copy of every open file until
/// it runs its program.
const UNMOUNT_PAUSES_MS: [u64; 6] = [1, 2, 5, 10, 20, 50];

/// `struct loop_info64` (linux/loop.h).
#[repr(C)]
struct LoopInfo64 {
    device: u64,
    inode: u64,
    rdevice: u64,
    offset: u64,
    sizelimit: u64,
    number: u32,
    encrypt_type: u32,
    encrypt_key_size: u32,
    flags: u32,
    file_name: [u8; 64],
    crypt_name: [u8; 64],
    encrypt_key: [u8; 32],
    init: [u64; 2],
}

/// `struct loop_config` (linux/loop.h).
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// Binds `image` to a free loop device that clears itself once unused, and
/// returns the device's path and an open handle (the device stays bound
/// while the handle or a mount holds it).
fn attach(image: &File) -> io::Result<(PathBuf, File)> {
    let control = File::options()
        .read(true)
        .write(true)
        .open("/dev/loop-control")?;
    let mut last = io::Error::other("no free loop device");
    for _ in 0..ATTACH_TRIES {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a number.
        let n = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let path = PathBuf::from(format!("/dev/loop{n}"));
        let device = File::options().read(true).write(true).open(&path)?;
        let config = LoopConfig {
            fd: image.as_raw_fd() as u32,
            block_size: 0,
            info: LoopInfo64 {
                device: 0,
                inode: 0,
                rdevice: 0,
                offset: 0,
                sizelimit: 0,
                number: 0,
                encrypt_type: 0,
                encrypt_key_size: 0,
                flags: LO_FLAGS_AUTOCLEAR,
                file_name: [0; 64],
                crypt_name: [0; 64],
                encrypt_key: [0; 32],
                init: [0; 2],
            },
            reserved: [0; 8],
        };
        // SAFETY: LOOP_CONFIGURE reads one `struct loop_config`, which
        // `config` is, laid out as the kernel's; it outlives the call.
        let r = unsafe { libc::ioctl(device.as_raw_fd(), LOOP_CONFIGURE, &config) };
        if r == 0 {
            return Ok((path, device));
        }
        last = io::Error::last_os_error();
        if last.raw_os_error() != Some(libc::EBUSY) {
            return Err(last);
        }
    }
    Err(last)
}

/// A crash state's image mounted on a directory: the file system's recovery
/// has run. Dropping it unmounts (lazily, if the mount is still busy); the
/// loop device then clears itself.
///
/// # Examples
///
/// ```no_run
/// use blackout_block::mount::MountedImage;
/// use blackout_block::session::FsKind;
/// use std::path::Path;
/// let m = MountedImage::mount(Path::new("state.img"), Path::new("mnt"), FsKind::Ext4, "")?;
/// println!("{:?}", std::fs::read_dir(m.path())?.count());
/// m.unmount()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct MountedImage {
    target: PathBuf,
    device: PathBuf,
    mounted: bool,
}

impl MountedImage {
    /// Mounts `image` (a throw-away copy: mounting writes to it) as `fs` on
    /// `target`, an existing empty directory, with `options` (`mount -o`
    /// text; xfs also gets `nouuid`, since every copy has the same UUID).
    /// An error names the step and the device.
    pub fn mount(
        image: &Path,
        target: &Path,
        fs: FsKind,
        options: &str,
    ) -> io::Result<MountedImage> {
        let file = File::options().read(true).write(true).open(image)?;
        let (device, handle) = attach(&file)
            .map_err(|e| io::Error::new(e.kind(), format!("setting up a loop device: {e}")))?;
        drop(file);
        let mut data = options.to_string();
        if fs == FsKind::Xfs {
            if !data.is_empty() {
                data.push(',');
            }
            data.push_str("nouuid");
        }
        let data = std::ffi::CString::new(data).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "mount options hold a NUL byte")
        })?;
        let mounted = rustix::mount::mount(
            &device,
            target,
            fs.name(),
            rustix::mount::MountFlags::empty(),
            data.as_c_str(),
        );
        // The mount holds the device now (or nothing does, and closing the
        // handle clears it).
        drop(handle);
        mounted.map_err(|e| {
            io::Error::other(format!("mount -t {} {}: {e}", fs.name(), device.display()))
        })?;
        Ok(MountedImage {
            target: target.to_path_buf(),
            device,
            mounted: true,
        })
    }

    /// Where the file system is mounted.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// The loop device it is mounted from.
    pub fn device(&self) -> &Path {
        &self.device
    }

    /// Unmounts; the loop device clears itself. While the file system is
    /// busy it is tried again a few times, then detached: a file of it may
    /// still be held a moment by a command another thread is starting (see
    /// `UNMOUNT_PAUSES_MS`), or for longer by a process a checker left
    /// running; the kernel lets the file system go when its last user does.
    pub fn unmount(mut self) -> io::Result<()> {
        self.mounted = false;
        let said = |e: rustix::io::Errno| {
            io::Error::other(format!("umount {}: {e}", self.target.display()))
        };
        for pause in UNMOUNT_PAUSES_MS {
            match rustix::mount::unmount(&self.target, rustix::mount::UnmountFlags::empty()) {
                Err(rustix::io::Errno::BUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(pause))
                }
                done => return done.map_err(said),
            }
        }
        rustix::mount::unmount(&self.target, rustix::mount::UnmountFlags::DETACH).map_err(said)
    }
}

impl Drop for MountedImage {
    fn drop(&mut self) {
        if self.mounted {
            // Still busy (a checker's process left in it): detach it now,
            // the kernel finishes when the last user leaves.
            if rustix::mount::unmount(&self.target, rustix::mount::UnmountFlags::empty()).is_err() {
                let _ = rustix::mount::unmount(&self.target, rustix::mount::UnmountFlags::DETACH);
            }
        }
    }
}

/// What the file system's own checker said of an image it did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsckSaid {
    /// How the checker exited.
    pub status: String,
    /// Its first line that is not progress.
    pub line: String,
}

/// Runs the file system's checker read-only on `image`: `None` when it
/// finds nothing wrong.
pub fn fsck(fs: FsKind, image: &Path) -> io::Result<Option<FsckSaid>> {
    let (tool, args) = fs.fsck();
    let out = Command::new(tool)
        .args(args)
        .arg(image)
        .stdin(Stdio::null())
        .output()?;
    if out.status.success() {
        return Ok(None);
    }
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let progress = [
        "Pass ",
        "Phase ",
        "e2fsck ",
        "Checking",
        "Opening",
        "[",
        "- ",
        "Starting",
        "No modify",
    ];
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !progress.iter().any(|p| l.starts_with(p))
                && !l.contains(&*image.to_string_lossy())
        })
        .unwrap_or("")
        .to_string();
    Ok(Some(FsckSaid {
        status: out.status.to_string(),
        line,
    }))
}

#[cfg(test)]
mod fsck_tests {
    use super::*;
    use crate::session::tool_installed;
    use std::fs;

    /// The file system's checker on an ext4 image made here: nothing to
    /// say about a fresh one; a complaint (a line, not progress) once its
    /// superblock's magic number is gone.
    #[test]
    fn fsck_reports_a_damaged_ext4_and_not_a_sound_one() {
        if !tool_installed("mkfs.ext4") || !tool_installed("e2fsck") {
            assert!(std::env::var_os("CI").is_none(), "CI has e2fsprogs");
            eprintln!("note: e2fsprogs is not installed; skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("fs.img");
        fs::File::create(&image).unwrap().set_len(8 << 20).unwrap();
        let made = Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&image)
            .env("PATH", "/usr/sbin:/sbin:/usr/bin:/bin")
            .status()
            .unwrap();
        assert!(made.success());
        assert!(fsck(FsKind::Ext4, &image).unwrap().is_none());
        // s_magic is 56 bytes into the superblock, which starts at 1024.
        let f = fs::OpenOptions::new().write(true).open(&image).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &[0, 0], 1024 + 56).unwrap();
        let complaint = fsck(FsKind::Ext4, &image).unwrap().unwrap();
        assert!(
            !complaint.status.contains("exit status: 0"),
            "{complaint:?}"
        );
        assert!(!complaint.line.is_empty(), "{complaint:?}");
    }
}
