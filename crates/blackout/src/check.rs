//! Check: the checker protocol. Promises (lines of standard output made
//! before a crash), and one checker run on one crash state written into its
//! own directory.
//!
//! The checker is a shell command (`sh -c`) run with the state directory as
//! its working directory, `{dir}` replaced by that directory's path, and
//! these variables set:
//!
//! - `BLACKOUT_ACKED`: the promises, one per line;
//! - `BLACKOUT_ACKS_FILE`: a file holding the same;
//! - `BLACKOUT_OUTPUT_FILE`: a file holding everything the workload printed
//!   before the crash;
//! - `BLACKOUT_STATE`: the state's id (`c5.lost3`).
//!
//! Exit 0 accepts the state; anything else is a violation, and the last line
//! the checker wrote to stderr (else stdout) is its reason. The checker runs
//! in its own process group, which is killed when it exits, times out or the
//! run is cancelled.

use std::fs;
use std::io::{self, Read, Seek};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::ops::{escape_controls, OpKind};
use crate::proc::{wait_group, Waited};
use crate::record::{signal_name, substitute};
use crate::state::FsState;
use crate::trace::Trace;

/// One promise: a line of output.
#[derive(Debug, Clone)]
struct Promise {
    op: usize,
    line: Vec<u8>,
    terminated: bool,
}

/// What the workload printed to standard output, and where each op falls in
/// it, so that the promises made before any crash point are known.
#[derive(Debug, Clone)]
pub struct Outputs {
    stream: Vec<u8>,
    /// `upto[k]`: bytes printed by ops `0..k`.
    upto: Vec<usize>,
    prefix: Option<Vec<u8>>,
    /// Every promise, in order: the op that completed it, the line, and
    /// whether it ended with a newline (an unterminated last line counts
    /// only once the workload has ended).
    promises: Vec<Promise>,
}

impl Outputs {
    /// Collects the output ops of a trace. With `ack_prefix`, only lines
    /// starting with it are promises.
    pub fn new(trace: &Trace, ack_prefix: Option<&[u8]>) -> Outputs {
        let mut stream = Vec::new();
        let mut upto = Vec::with_capacity(trace.ops.len() + 1);
        upto.push(0);
        for op in &trace.ops {
            if let OpKind::Output { data } = op.kind {
                stream.extend_from_slice(trace.bytes(data));
            }
            upto.push(stream.len());
        }
        let mut out = Outputs {
            stream,
            upto,
            prefix: ack_prefix.map(<[u8]>::to_vec),
            promises: Vec::new(),
        };
        out.promises = out.locate_promises(trace);
        out
    }

    /// Which op completed each promise: the one that printed its newline
    /// (for an unterminated last line, the last output op).
    fn locate_promises(&self, trace: &Trace) -> Vec<Promise> {
        let mut found = Vec::new();
        let mut start = 0;
        let mut last_output = None;
        for (i, op) in trace.ops.iter().enumerate() {
            if !matches!(op.kind, OpKind::Output { .. }) {
                continue;
            }
            last_output = Some(i);
            for nl in memchr::memchr_iter(b'\n', &self.stream[self.upto[i]..self.upto[i + 1]]) {
                let end = self.upto[i] + nl;
                let line = &self.stream[start..end];
                if self.is_promise(line) {
                    found.push(Promise {
                        op: i,
                        line: self.clean(line).to_vec(),
                        terminated: true,
                    });
                }
                start = end + 1;
            }
        }
        if let Some(i) = last_output {
            let line = &self.stream[start..];
            if !line.is_empty() && self.is_promise(line) {
                found.push(Promise {
                    op: i,
                    line: self.clean(line).to_vec(),
                    terminated: false,
                });
            }
        }
        found
    }

    fn clean<'a>(&self, line: &'a [u8]) -> &'a [u8] {
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    fn is_promise(&self, line: &[u8]) -> bool {
        let l = self.clean(line);
        match &self.prefix {
            Some(p) => l.starts_with(p),
            None => !l.is_empty(),
        }
    }

    /// The promises made before crash point `k`.
    fn promises_at(&self, k: usize) -> impl Iterator<Item = &Promise> {
        let finished = k + 1 >= self.upto.len();
        self.promises
            .iter()
            .take_while(move |p| p.op < k)
            .filter(move |p| p.terminated || finished)
    }

    /// The latest promise made before crash point `k`: the op that completed
    /// it, and the line.
    pub fn latest_promise_before(&self, k: usize) -> Option<(usize, &[u8])> {
        self.promises_at(k)
            .last()
            .map(|p| (p.op, p.line.as_slice()))
    }

    /// Bytes printed before crash point `k` (its length identifies the
    /// promises, so it is part of a state's identity).
    pub fn printed_len(&self, k: usize) -> usize {
        self.upto[k.min(self.upto.len() - 1)]
    }

    /// Everything printed before crash point `k`.
    pub fn output_at(&self, k: usize) -> &[u8] {
        &self.stream[..self.printed_len(k)]
    }

    /// The promises made before crash point `k`: every complete line of
    /// output (and, once the workload has ended, its unterminated last
    /// line), narrowed by the ack prefix.
    pub fn acked_at(&self, k: usize) -> Vec<&[u8]> {
        self.promises_at(k).map(|p| p.line.as_slice()).collect()
    }

    /// All promises the workload made.
    pub fn all_acked(&self) -> Vec<&[u8]> {
        self.acked_at(self.upto.len() - 1)
    }

    /// The promises before crash point `k` as text, one per line (a NUL,
    /// which no environment variable can hold, is shown as `\0`).
    pub fn acked_text(&self, k: usize) -> Vec<u8> {
        join_lines(&self.acked_at(k))
    }
}

/// Promises as text, one per line (NUL shown as `\\0`).
pub(crate) fn join_lines(lines: &[&[u8]]) -> Vec<u8> {
    let mut v = Vec::new();
    for l in lines {
        for &b in *l {
            if b == 0 {
                v.extend_from_slice(b"\\0");
            } else {
                v.push(b);
            }
        }
        v.push(b'\n');
    }
    v
}

/// The checker command and its limits.
#[derive(Debug, Clone)]
pub struct Checker {
    /// The shell command (`{dir}` is substituted).
    pub command: String,
    /// How long one run may take before its process group is killed.
    pub timeout: Duration,
}

/// What one checker run said about a state.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// Exit 0: the state is acceptable.
    Pass,
    /// The checker rejected the state.
    Fail {
        /// How it ended: `exit code 1`, `killed by SIGSEGV`.
        status: String,
        /// The last line it wrote to stderr, else to stdout.
        reason: String,
    },
    /// The checker did not finish within the timeout; its group was killed.
    TimedOut {
        /// The timeout, in seconds.
        seconds: f64,
    },
    /// The checker could not be run at all (the shell said 126 or 127: not
    /// found, not executable).
    CannotRun {
        /// What the shell said.
        reason: String,
    },
}

impl Outcome {
    /// Whether the checker rejected the state.
    pub fn is_fail(&self) -> bool {
        matches!(self, Outcome::Fail { .. })
    }

    /// One line for a report.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Pass => "accepted".into(),
            Outcome::Fail { status, reason } if reason.is_empty() => {
                format!("rejected ({status}, nothing on stderr)")
            }
            Outcome::Fail { status, reason } => format!("rejected ({status}): {reason}"),
            Outcome::TimedOut { seconds } => {
                format!("did not finish within {seconds} s; killed with its process group")
            }
            Outcome::CannotRun { reason } => format!("could not be run: {reason}"),
        }
    }
}

/// One state to check: its files and what was printed before it.
pub struct StateInput<'a> {
    /// The file system.
    pub fs: &'a FsState,
    /// The promises, one per line.
    pub acked: &'a [u8],
    /// Everything printed before the crash.
    pub output: &'a [u8],
}

/// A checking worker's directory, reused from state to state: `root/fs`
/// (the state, the checker's cwd, made afresh for each state), `root/acks`,
/// `root/output`, and the checker's `root/stdout` and `root/stderr`
/// (overwritten each time: creating and removing them per state costs more
/// than the checker itself on a journaled file system).
pub struct Slot {
    /// The directory holding them.
    pub root: PathBuf,
    stdout: fs::File,
    stderr: fs::File,
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
        })
    }

    /// Empties the checker's stdout or stderr file and returns a handle for
    /// the next checker (sharing its offset, now 0).
    fn fresh(file: &fs::File) -> io::Result<fs::File> {
        file.set_len(0)?;
        (&*file).seek(io::SeekFrom::Start(0))?;
        file.try_clone()
    }

    /// What the last checker wrote to a file.
    fn read_back(file: &fs::File) -> io::Result<Vec<u8>> {
        let mut v = Vec::new();
        (&*file).seek(io::SeekFrom::Start(0))?;
        (&*file).read_to_end(&mut v)?;
        Ok(v)
    }

    /// The state directory.
    pub fn fs(&self) -> PathBuf {
        self.root.join("fs")
    }

    /// Writes a state and its promises.
    pub fn write(&self, input: &StateInput<'_>) -> io::Result<()> {
        fs::create_dir(self.fs())?;
        input.fs.write_out(&self.fs())?;
        fs::write(self.root.join("acks"), input.acked)?;
        fs::write(self.root.join("output"), input.output)?;
        Ok(())
    }

    /// Removes the state directory and everything in it (a checker may have
    /// left anything there, including directories it made read-only).
    pub fn clear(&self) -> io::Result<()> {
        remove_tree(&self.fs())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let _ = remove_tree(&self.root);
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

fn make_writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                make_writable(&e.path());
            }
        }
    }
}

/// Runs the checker on the state a slot holds.
pub fn run_checker(
    checker: &Checker,
    slot: &Slot,
    id: &str,
    acked: &[u8],
    cancel: Option<&AtomicBool>,
) -> io::Result<Option<Outcome>> {
    let fs_dir = slot.fs();
    let command = substitute(std::ffi::OsStr::new(&checker.command), &fs_dir);
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&fs_dir)
        .env(
            "BLACKOUT_ACKED",
            std::ffi::OsStr::from_bytes(acked.strip_suffix(b"\n").unwrap_or(acked)),
        )
        .env("BLACKOUT_ACKS_FILE", slot.root.join("acks"))
        .env("BLACKOUT_OUTPUT_FILE", slot.root.join("output"))
        .env("BLACKOUT_STATE", id)
        .stdin(Stdio::null())
        .stdout(Slot::fresh(&slot.stdout)?)
        .stderr(Slot::fresh(&slot.stderr)?)
        .process_group(0);
    let mut child = cmd.spawn()?;
    let outcome = match wait_group(&mut child, Some(checker.timeout), cancel)? {
        Waited::Cancelled => return Ok(None),
        Waited::TimedOut => Outcome::TimedOut {
            seconds: checker.timeout.as_secs_f64(),
        },
        Waited::Exited(status) if status.success() => Outcome::Pass,
        Waited::Exited(status) => {
            let reason = last_line(&Slot::read_back(&slot.stderr)?)
                .or_else(|| last_line(&Slot::read_back(&slot.stdout).unwrap_or_default()))
                .unwrap_or_default();
            match (status.code(), status.signal()) {
                (Some(c @ (126 | 127)), _) => Outcome::CannotRun {
                    reason: if reason.is_empty() {
                        format!("the shell exited {c}")
                    } else {
                        reason
                    },
                },
                (Some(c), _) => Outcome::Fail {
                    status: format!("exit code {c}"),
                    reason,
                },
                (None, Some(sig)) => Outcome::Fail {
                    status: format!("killed by {}", signal_name(sig)),
                    reason,
                },
                _ => Outcome::Fail {
                    status: "ended".into(),
                    reason,
                },
            }
        }
    };
    Ok(Some(outcome))
}

/// The last non-blank line of a checker's output, on one line, at most 300
/// characters.
fn last_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let line = escape_controls(line.trim());
    Some(if line.chars().count() > 300 {
        let cut: String = line.chars().take(300).collect();
        format!("{cut}...")
    } else {
        line
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{DataRef, Op};

    fn outputs(pieces: &[&str], prefix: Option<&str>) -> Outputs {
        let mut data = Vec::new();
        let mut ops = Vec::new();
        for p in pieces {
            ops.push(Op {
                kind: OpKind::Output {
                    data: DataRef {
                        start: data.len() as u64,
                        len: p.len() as u64,
                    },
                },
                syscall: "write".into(),
                pid: 1,
                line: 1,
                path: "<stdout>".into(),
                stack: Vec::new(),
                origin: None,
            });
            data.extend_from_slice(p.as_bytes());
        }
        let trace = Trace {
            ops,
            data,
            ..Trace::default()
        };
        Outputs::new(&trace, prefix.map(str::as_bytes))
    }

    #[test]
    fn promises_are_complete_lines_before_the_crash() {
        let o = outputs(&["start\nsav", "ed\n", "tail"], None);
        assert!(o.acked_at(0).is_empty());
        assert_eq!(o.acked_at(1), vec![&b"start"[..]]);
        assert_eq!(o.acked_at(2), vec![&b"start"[..], b"saved"]);
        // The workload ended: its unterminated last line counts.
        assert_eq!(o.all_acked(), vec![&b"start"[..], b"saved", b"tail"]);
        assert_eq!(o.output_at(1), b"start\nsav");
        assert_eq!(o.latest_promise_before(1), Some((0, &b"start"[..])));
        assert_eq!(o.latest_promise_before(2), Some((1, &b"saved"[..])));
        assert_eq!(o.latest_promise_before(3), Some((2, &b"tail"[..])));
        assert_eq!(o.latest_promise_before(0), None);
    }

    #[test]
    fn the_ack_prefix_narrows_promises() {
        let o = outputs(&["log: x\nACK 1\n", "ACK 2\n"], Some("ACK"));
        assert_eq!(o.all_acked(), vec![&b"ACK 1"[..], b"ACK 2"]);
        assert_eq!(o.acked_text(1), b"ACK 1\n");
    }
}
