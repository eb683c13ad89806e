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
}

impl Materializer for FuseMaterializer {
    fn kind(&self) -> MaterializerKind {
        MaterializerKind::Fuse
    }

    fn open(&self, dir: &Path) -> io::Result<Box<dyn View>> {
        std::fs::create_dir(dir).map_err(|e| at("creating the state directory", dir, e))?;
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

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = self.view.unmount();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The materializer for a run: `forced` when given (an error when it cannot
/// work here), else the FUSE view when this process can mount it under
/// `scratch_parent`, else the directory materializer with the reason in one
/// line (for the run to print). An in-process checker (`in_process`) always
/// reads directories: a FUSE view served by the checker's own process can
/// deadlock on that process's memory map (a page fault on a mapped file of
/// the view waits on the daemon thread, which waits for the map's lock).
///
/// # Errors
///
/// `--materializer fuse` where FUSE cannot be mounted or the checker runs
/// in-process.
pub fn choose(
    forced: Option<MaterializerKind>,
    scratch_parent: &Path,
    in_process: bool,
) -> Result<(Box<dyn Materializer>, Option<String>), String> {
    if forced == Some(MaterializerKind::Dir) {
        return Ok((Box::new(DirMaterializer::default()), None));
    }
    let unavailable = if in_process {
        Some("the checker runs in-process, and a FUSE view served by its own process could deadlock on its memory map".to_string())
    } else {
        fuse_unavailable(scratch_parent)
    };
    match (unavailable, forced) {
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
