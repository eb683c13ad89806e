//! How a crash state reaches the checker: the [`Materializer`] seam, with
//! two implementations. [`DirMaterializer`] writes each state out as a
//! directory tree (every byte of every file, each time); [`FuseMaterializer`]
//! shows it through one FUSE mount per worker ([`crate::view`]), which
//! produces a file's bytes only when the checker reads them. Both give the
//! checker an ordinary writable directory at the same path, and a state's
//! writes never reach another state.
//!
//! [`choose`] picks one for a run: the FUSE view where this process may
//! mount it (root, `/dev/fuse`, a probe mount that works), else the
//! directory, with the reason in one line.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use blackout_explore::state::FsState;
pub use blackout_explore::state::{Cost, MaterializerKind};

use crate::forked::ForkedView;
use crate::view::{Counters, FuseView};

/// Turns built crash states into a directory a checker can work in.
pub trait Materializer: Send + Sync {
    /// What it is called on the command line and in reports.
    fn kind(&self) -> MaterializerKind;

    /// One worker's view, at `dir` (which must not exist), made on the
    /// thread that will show states in it (a mount lands in that thread's
    /// mount namespace).
    ///
    /// # Errors
    ///
    /// The directory or the mount could not be made.
    fn open(&self, dir: &Path) -> io::Result<Box<dyn View>>;

    /// What showing states has cost so far, over every view.
    fn cost(&self) -> Cost;
}

/// One worker's directory of crash states, reused from state to state.
pub trait View: Send {
    /// Shows `fs` in the directory (empty before).
    ///
    /// # Errors
    ///
    /// Writing it out failed.
    fn show(&mut self, fs: &FsState) -> io::Result<()>;

    /// Empties the directory: the state and whatever its checker left.
    ///
    /// # Errors
    ///
    /// Removing it failed.
    fn clear(&mut self) -> io::Result<()>;
}

fn cost_of(kind: MaterializerKind, c: &Counters) -> Cost {
    Cost {
        kind: Some(kind),
        states: c.states.load(Ordering::Relaxed),
        written: c.written.load(Ordering::Relaxed),
        read: c.read.load(Ordering::Relaxed),
    }
}

/// Writes crash states as directory trees ([`FsState::write_out`]).
#[derive(Debug, Default)]
pub struct DirMaterializer {
    counters: Arc<Counters>,
}

impl Materializer for DirMaterializer {
    fn kind(&self) -> MaterializerKind {
        MaterializerKind::Dir
    }

    fn open(&self, dir: &Path) -> io::Result<Box<dyn View>> {
        Ok(Box::new(DirView {
            dir: dir.to_path_buf(),
            counters: self.counters.clone(),
        }))
    }

    fn cost(&self) -> Cost {
        cost_of(MaterializerKind::Dir, &self.counters)
    }
}

struct DirView {
    dir: PathBuf,
    counters: Arc<Counters>,
}

impl View for DirView {
    fn show(&mut self, fs: &FsState) -> io::Result<()> {
        std::fs::create_dir(&self.dir)
            .map_err(|e| at("creating the state directory", &self.dir, e))?;
        let written = fs
            .write_out_counted(&self.dir)
            .map_err(|e| at("writing the state into", &self.dir, e))?;
        self.counters.states.fetch_add(1, Ordering::Relaxed);
        self.counters.written.fetch_add(written, Ordering::Relaxed);
        Ok(())
    }

    fn clear(&mut self) -> io::Result<()> {
        blackout_sys::scratch::remove_tree(&self.dir)
            .map_err(|e| at("removing the state directory", &self.dir, e))
    }
}

/// Shows crash states through one FUSE mount per worker ([`crate::view`]).
#[derive(Debug, Default)]
pub struct FuseMaterializer {
    counters: Arc<Counters>,
    /// Each state served by a child process ([`crate::forked`]): the
    /// checker runs in this process.
    forked: bool,
}

impl FuseMaterializer {
    /// The view for checkers that run in this process: each state is
    /// served by a child process of its own, so that the checker's page
    /// faults never wait on a thread of the process they stopped.
    pub fn in_process() -> FuseMaterializer {
        FuseMaterializer {
            forked: true,
            ..FuseMaterializer::default()
        }
    }
}

impl Materializer for FuseMaterializer {
    fn kind(&self) -> MaterializerKind {
        MaterializerKind::Fuse
    }

    fn open(&self, dir: &Path) -> io::Result<Box<dyn View>> {
        std::fs::create_dir(dir).map_err(|e| at("creating the state directory", dir, e))?;
        if self.forked {
            return Ok(Box::new(ForkedView::new(dir, self.counters.clone())));
        }
        let view = FuseView::mount(dir, self.counters.clone()).map_err(|e| {
            let _ = std::fs::remove_dir(dir);
            io::Error::new(
                e.kind(),
                format!("cannot mount the FUSE view at {}: {e}", dir.display()),
            )
        })?;
        Ok(Box::new(Mounted {
            view,
            dir: dir.to_path_buf(),
        }))
    }

    fn cost(&self) -> Cost {
        cost_of(MaterializerKind::Fuse, &self.counters)
    }
}

struct Mounted {
    view: FuseView,
    dir: PathBuf,
}

impl View for Mounted {
    fn show(&mut self, fs: &FsState) -> io::Result<()> {
        self.view.show(fs);
        Ok(())
    }

    fn clear(&mut self) -> io::Result<()> {
        self.view.clear();
        Ok(())
    }
}

impl View for ForkedView {
    fn show(&mut self, fs: &FsState) -> io::Result<()> {
        ForkedView::show(self, fs)
    }

    fn clear(&mut self) -> io::Result<()> {
        ForkedView::clear(self)
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = self.view.unmount();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// States whose files hold fewer bytes than this are written out even
/// where the FUSE view could show them: writing a small state costs less
/// than the view's round trips (SQLite, 1 MB: 527 states/s written out,
/// 460 through the view; 60 MB: 52 against 378; docs/PERFORMANCE.md).
pub const VIEW_FROM_BYTES: u64 = 4 << 20;

/// The same for a checker that runs in this process, whose view is served
/// by a child process per state: forking it, mounting and unmounting, and
/// the copies the checker's writes to this process's memory cause while
/// the child lives cost ~9 ms per state (SQLite in-process, 1 MB: 2,813
/// states/s written out, 232 through the view; 60 MB: 60 against 183).
pub const FORKED_VIEW_FROM_BYTES: u64 = 16 << 20;

/// The materializer for a run whose states hold up to `state_bytes` of file
/// data ([`FsState::held_bytes`]): `forced` when given (an error when it
/// cannot work here); else the FUSE view for states of
/// [`VIEW_FROM_BYTES`] or more ([`FORKED_VIEW_FROM_BYTES`] for a checker
/// in this process) where this process can mount it under
/// `scratch_parent`, and the directory materializer otherwise (with the
/// reason in one line when the view could not be mounted, for the run to
/// print). For an in-process checker (`in_process`) each state's view is
/// served by a child process ([`FuseMaterializer::in_process`]).
///
/// # Errors
///
/// `--materializer fuse` where FUSE cannot be mounted.
pub fn choose(
    forced: Option<MaterializerKind>,
    scratch_parent: &Path,
    in_process: bool,
    state_bytes: u64,
) -> Result<(Box<dyn Materializer>, Option<String>), String> {
    let from = if in_process {
        FORKED_VIEW_FROM_BYTES
    } else {
        VIEW_FROM_BYTES
    };
    if forced == Some(MaterializerKind::Dir) || (forced.is_none() && state_bytes < from) {
        return Ok((Box::new(DirMaterializer::default()), None));
    }
    match (fuse_unavailable(scratch_parent), forced) {
        (None, _) if in_process => Ok((Box::new(FuseMaterializer::in_process()), None)),
        (None, _) => Ok((Box::new(FuseMaterializer::default()), None)),
        (Some(why), Some(_)) => Err(format!("--materializer fuse: {why}")),
        (Some(why), None) => Ok((
            Box::new(DirMaterializer::default()),
            Some(format!("states written as directories ({why})")),
        )),
    }
}

/// Why the FUSE view cannot be mounted here, or `None` when a probe mount
/// under `scratch_parent` worked.
fn fuse_unavailable(scratch_parent: &Path) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("the FUSE view needs root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse".into());
    }
    let probe = || -> io::Result<()> {
        let tmp = tempfile::Builder::new()
            .prefix("blackout-probe-")
            .tempdir_in(scratch_parent)?;
        blackout_sys::scratch::mark_owned(tmp.path())?;
        let fs = tmp.path().join("fs");
        std::fs::create_dir(&fs)?;
        let mut view = FuseView::mount(&fs, Arc::default())?;
        view.unmount()
    };
    probe().err().map(|e| format!("no FUSE mount: {e}"))
}

/// An I/O error that names what was done to which path, and that a checker
/// can have caused it (without isolation they run with the slot's parent
/// reachable).
pub(crate) fn at(what: &str, path: &Path, e: io::Error) -> io::Error {
    // A full, read-only or forbidden scratch file system, not a checker.
    let hint = match e.kind() {
        io::ErrorKind::StorageFull
        | io::ErrorKind::ReadOnlyFilesystem
        | io::ErrorKind::PermissionDenied => {
            "the scratch directory comes from TMPDIR, else /dev/shm: point TMPDIR at a writable directory with room"
        }
        _ => "did a checker change files outside its own state directory?",
    };
    io::Error::new(e.kind(), format!("{what} {}: {e} ({hint})", path.display()))
}
