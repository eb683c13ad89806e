//! The FUSE view served from another process, for checkers that run in
//! this one (`blackout::Scenario`'s closures).
//!
//! A view served by a thread of the checker's own process can deadlock it:
//! a page fault on a mapped file of the view (SQLite's `-shm`) holds the
//! process's memory-map lock while it waits for the daemon, and the daemon
//! thread, growing its heap, waits for that same lock. So each state is
//! served by a child forked for it: the child holds a copy of the built
//! state (fork shares its pages), mounts the view in the worker's mount
//! namespace, says it is ready, serves until the worker says stop, then
//! unmounts, sends back what the checker read and wrote, and exits. The
//! daemon's memory is then the child's, and the checker's faults wait on
//! another process.
//!
//! The child of a multi-threaded process has only the forking thread: it
//! allocates (glibc's allocator is fork-safe) and starts the daemon's
//! thread, and touches no lock another thread may hold. It ignores the
//! terminal's signals (the worker decides when it stops) and dies with the
//! worker's thread (`PR_SET_PDEATHSIG`), so a killed run leaves no server
//! behind. Its control pipes are closed in every other child, so each
//! child's "stop" and each worker's "ready" reach only their own ends.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use blackout_explore::state::FsState;

use crate::view::{Counters, FuseView};

/// The workers' ends of every live child's control pipes: a child forked
/// later closes them (it must not keep another child's "stop" pipe open, or
/// another worker's "ready" pipe). Held across each fork, so no child is
/// forked while a pipe is half made.
static CONTROL: Mutex<Vec<RawFd>> = Mutex::new(Vec::new());

/// Allocations from this size up get pages of their own in the child
/// (glibc's default before it adapts).
const MMAP_THRESHOLD_BYTES: i32 = 128 * 1024;

/// What a child says first: mounted and showing the state, or why not.
const READY: u8 = b'R';
const FAILED: u8 = b'E';

/// One worker's view whose states are each served by a child process.
pub(crate) struct ForkedView {
    dir: PathBuf,
    counters: Arc<Counters>,
    child: Option<Child>,
}

/// The child serving the state shown now.
struct Child {
    pid: rustix::process::Pid,
    /// Where it says ready, and at the end what it served.
    from: std::fs::File,
    /// Where it is told to stop.
    to: std::fs::File,
}

impl ForkedView {
    /// A view at `dir` (an existing empty directory), mounted per state.
    pub(crate) fn new(dir: &Path, counters: Arc<Counters>) -> ForkedView {
        ForkedView {
            dir: dir.to_path_buf(),
            counters,
            child: None,
        }
    }

    /// Tells the child to stop, takes its counts and waits for it.
    fn stop(&mut self) -> io::Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // The child may be gone already: then the write fails, the read
        // sees the end, and the wait reaps it.
        let _ = child.to.write_all(b"S");
        let mut counts = [0u8; 16];
        let told = child.from.read_exact(&mut counts);
        let reaped = child.reap();
        if let Err(e) = told {
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "the FUSE view's server at {} ended early: {e}",
                    self.dir.display()
                ),
            ));
        }
        let [written, read] = [0, 8].map(|at| {
            let mut n = [0u8; 8];
            n.copy_from_slice(&counts[at..at + 8]);
            u64::from_le_bytes(n)
        });
        self.counters.written.fetch_add(written, Ordering::Relaxed);
        self.counters.read.fetch_add(read, Ordering::Relaxed);
        reaped
    }
}

impl ForkedView {
    /// Shows `fs`: a child forked for it mounts the view and serves it
    /// (after the previous state's child, if any, is stopped).
    pub(crate) fn show(&mut self, fs: &FsState) -> io::Result<()> {
        self.stop()?;
        let child = spawn(&self.dir, fs)?;
        self.child = Some(child);
        self.counters.states.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Takes the state away: its child unmounts the view and ends.
    pub(crate) fn clear(&mut self) -> io::Result<()> {
        self.stop()
    }
}

impl Drop for ForkedView {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

fn forget_control(fds: &[RawFd]) {
    crate::lock(&CONTROL).retain(|fd| !fds.contains(fd));
}

/// Forks a child that mounts the view at `dir` showing `fs`, and waits
/// until it is ready.
fn spawn(dir: &Path, fs: &FsState) -> io::Result<Child> {
    let parent = rustix::thread::gettid();
    let (pid, from_child, to_child) = blackout_sys::proc::own(|| {
        let mut control = crate::lock(&CONTROL);
        let (from_child, child_says) = pipe()?;
        let (child_hears, to_child) = pipe()?;
        // SAFETY: the child runs only `serve`, which never returns (it ends
        // in `_exit`), touches no lock another thread can hold (CONTROL and
        // the own-children lock are held by this thread, copied locked into
        // the child and never taken there again), and allocates only
        // through glibc's fork-safe allocator.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            for &fd in control.iter() {
                // SAFETY: the workers' ends of other children's pipes, open
                // in the parent; closed here, in the child only.
                unsafe { libc::close(fd) };
            }
            drop((from_child, to_child));
            serve(dir, fs, child_says, child_hears, parent);
        }
        control.extend([from_child.as_raw_fd(), to_child.as_raw_fd()]);
        Ok(((pid, from_child, to_child), pid.unsigned_abs()))
    })?;
    let mut child = Child {
        pid: rustix::process::Pid::from_raw(pid).expect("fork returned a child's pid"),
        from: std::fs::File::from(from_child),
        to: std::fs::File::from(to_child),
    };
    let mut first = [0u8; 1];
    if child.from.read_exact(&mut first).is_ok() && first[0] == READY {
        return Ok(child);
    }
    let mut why = String::new();
    let _ = child.from.read_to_string(&mut why);
    let _ = child.reap();
    if why.is_empty() {
        why = "its server process ended before it was ready".into();
    }
    Err(io::Error::other(format!(
        "cannot mount the FUSE view at {}: {why}",
        dir.display()
    )))
}

impl Child {
    /// Closes the pipes and waits for the child to end.
    fn reap(self) -> io::Result<()> {
        forget_control(&[self.from.as_raw_fd(), self.to.as_raw_fd()]);
        drop((self.from, self.to));
        let waited =
            rustix::process::waitpid(Some(self.pid), rustix::process::WaitOptions::empty());
        blackout_sys::proc::forget(self.pid.as_raw_nonzero().get().unsigned_abs());
        waited.map(drop).map_err(io::Error::from)
    }
}

/// The child: mounts, shows `fs`, serves until told to stop (or the
/// worker's end closes), unmounts and reports its counts. Never returns.
fn serve(
    dir: &Path,
    fs: &FsState,
    says: OwnedFd,
    hears: OwnedFd,
    parent: rustix::process::Pid,
) -> ! {
    // SAFETY: plain calls on this process's own signal dispositions, death
    // signal and allocator settings, in its only thread.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The daemon's 16 MiB request buffer from fresh pages: the parent's
        // allocator has usually raised its threshold past that (it freed
        // such buffers), and a buffer zeroed out of the inherited heap cost
        // ~9 ms per state, most of a state's time.
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
    }
    // The worker's thread may have ended before the death signal was set.
    let alive = rustix::process::test_kill_process(parent).is_ok();
    let mut says = std::fs::File::from(says);
    let mut hears = std::fs::File::from(hears);
    let code = if !alive {
        1
    } else {
        let counters = Arc::new(Counters::default());
        match FuseView::mount(dir, counters.clone()) {
            Err(e) => {
                let _ = says.write_all(&[FAILED]);
                let _ = says.write_all(e.to_string().as_bytes());
                1
            }
            Ok(mut view) => {
                view.show(fs);
                let _ = says.write_all(&[READY]);
                let mut stop = [0u8; 1];
                let _ = hears.read(&mut stop);
                let unmounted = view.unmount();
                let mut counts = Vec::with_capacity(16);
                for n in [&counters.written, &counters.read] {
                    counts.extend_from_slice(&n.load(Ordering::Relaxed).to_le_bytes());
                }
                let _ = says.write_all(&counts);
                i32::from(unmounted.is_err())
            }
        }
    };
    // SAFETY: ends the child without running the parent's exit handlers or
    // destructors (they belong to the parent's state).
    unsafe { libc::_exit(code) }
}
