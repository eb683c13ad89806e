//! A checking worker's slot: the directory a state is written into for the
//! checker, reused from state to state.

use std::fs;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use blackout_explore::state::FsState;

pub(crate) use crate::materialize::at;
use crate::materialize::{Materializer, View};

/// How much of a checker's stdout or stderr is read back for its reason, in
/// bytes (the tail; the rest stays in the slot's file until the next state).
pub const CHECKER_OUTPUT_TAIL_BYTES: u64 = 64 * 1024;

/// One state to check: its files and what was printed before it.
pub struct StateInput<'a> {
    /// The file system.
    pub fs: &'a FsState,
    /// How to show it (the slot's view is opened with it, on the thread
    /// that writes the slot's first state).
    pub materializer: &'a dyn Materializer,
    /// The promises, one per line.
    pub promises: &'a [u8],
    /// Everything printed before the crash.
    pub output: &'a [u8],
    /// Whether to write the promises and the output into the slot's
    /// `acks` and `output` files ([`crate::Checker::reads_slot_files`]).
    pub slot_files: bool,
}

/// A checking worker's directory, reused from state to state: `root/fs`
/// (the state, the checker's cwd, shown by the run's [`Materializer`]),
/// `root/acks`,
/// `root/output`, and the checker's `root/stdout` and `root/stderr`
/// (overwritten each time: creating and removing them per state costs more
/// than the checker itself on a journaled file system).
pub struct Slot {
    /// The directory holding them.
    pub root: PathBuf,
    pub(crate) stdout: fs::File,
    pub(crate) stderr: fs::File,
    /// The view of `root/fs`, opened at the first state.
    view: Mutex<Option<Box<dyn View>>>,
}

impl Slot {
    /// Makes the worker's directory, which must not exist.
    pub fn new(root: &Path) -> io::Result<Slot> {
        fs::create_dir(root)?;
        let open = |name: &str| {
            fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(root.join(name))
        };
        Ok(Slot {
            root: root.to_path_buf(),
            stdout: open("stdout")?,
            stderr: open("stderr")?,
            view: Mutex::new(None),
        })
    }

    /// Empties the checker's stdout or stderr file and returns a handle for
    /// the next checker (sharing its offset, now 0).
    pub(crate) fn fresh(file: &fs::File) -> io::Result<fs::File> {
        file.set_len(0)?;
        (&*file).seek(io::SeekFrom::Start(0))?;
        file.try_clone()
    }

    /// What the last checker wrote to a file.
    /// At most the last [`CHECKER_OUTPUT_TAIL_BYTES`] of it: a checker may
    /// print gigabytes, and only its last line is its reason.
    pub(crate) fn read_back(file: &fs::File) -> io::Result<Vec<u8>> {
        let len = file.metadata()?.len();
        let start = len.saturating_sub(CHECKER_OUTPUT_TAIL_BYTES);
        let mut v = Vec::new();
        let mut reader: &fs::File = file;
        reader.seek(io::SeekFrom::Start(start))?;
        reader.take(CHECKER_OUTPUT_TAIL_BYTES).read_to_end(&mut v)?;
        Ok(v)
    }

    /// The state directory.
    pub fn fs(&self) -> PathBuf {
        self.root.join("fs")
    }

    /// What the checker gets: the state's directory and files, its id and
    /// its promises.
    pub fn files<'a>(&self, id: &'a str, promises: &'a [u8]) -> crate::StateFiles<'a> {
        crate::StateFiles {
            dir: self.fs(),
            acks_file: self.root.join("acks"),
            output_file: self.root.join("output"),
            id,
            promises,
        }
    }

    /// Writes a state and its promises. An error names the path and what
    /// was being done (a checker may have removed or changed the slot).
    pub fn write(&self, input: &StateInput<'_>) -> io::Result<()> {
        {
            let mut view = crate::lock(&self.view);
            let view = match &mut *view {
                Some(v) => v,
                None => view.insert(input.materializer.open(&self.fs())?),
            };
            view.show(input.fs)?;
        }
        if !input.slot_files {
            return Ok(());
        }
        for (name, bytes) in [("acks", input.promises), ("output", input.output)] {
            let path = self.root.join(name);
            fs::write(&path, bytes).map_err(|e| at("writing", &path, e))?;
        }
        Ok(())
    }

    /// Empties the state directory of the state and everything a checker
    /// left there (including directories it made read-only).
    pub fn clear(&self) -> io::Result<()> {
        match &mut *crate::lock(&self.view) {
            Some(view) => view.clear(),
            None => Ok(()),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // A mounted view goes first (from the thread that mounted it).
        drop(crate::lock(&self.view).take());
        let _ = blackout_sys::scratch::remove_tree(&self.root);
    }
}
