//! Replay: an strace log → ops, on a model of the file system.
//!
//! The log is parsed ([`crate::strace`]), each completed call decoded into a
//! typed event ([`crate::decode`]) and applied to the file-system model
//! ([`crate::fsmodel`]), which emits the ops that changed the directory under
//! test. This module wires the three together, in log order, and places each
//! failure at the line and call it is about.
//!
//! Replay never does I/O: paths in a log are only ever looked up in the model,
//! so a hostile log (absolute paths, `..`, symlinks pointing anywhere) cannot
//! make blackout read or write outside its own memory.
//!
//! Where the model and the log disagree (a call succeeded that the model says
//! must fail) replay stops with an error naming the line: a silent divergence
//! would make every later verdict wrong.

use blackout_oplog::tree::Tree;

pub use crate::error::{ReplayError, ReplayErrorKind};
pub use blackout_oplog::trace::{ReplayStats, Replayed, MODEL_FILE_BYTES_MAX};

use crate::decode;
use crate::error::Fault;
use crate::fsmodel::FsModel;
use crate::strace::{self, Event};

impl From<strace::ParseError> for ReplayError {
    fn from(e: strace::ParseError) -> Self {
        Fault::new(ReplayErrorKind::Parse, e.message).at(e.line, None)
    }
}

/// Replays a log on an empty initial tree into a trace without metadata:
/// for tests and tools that have a log and no recording. `dir` as for
/// [`replay`].
pub fn trace_of_log(log: &[u8], dir: &[u8]) -> Result<blackout_oplog::trace::Trace, ReplayError> {
    use blackout_oplog::trace::{Trace, TraceMeta};
    let tree = Tree::default();
    let replayed = replay(log, &tree, dir)?;
    Ok(Trace::new(&tree, replayed, TraceMeta::default()))
}

/// Replays a log against an initial tree. `dir` is the absolute path the
/// directory under test had when the log was recorded.
pub fn replay(log: &[u8], tree: &Tree, dir: &[u8]) -> Result<Replayed, ReplayError> {
    replay_with(log, tree, dir, &ReplayOptions::default())
}

/// What replay may accept beyond the default.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Files (globs on the path inside the directory under test or on the
    /// file name, `*-shm`) the program treats as volatile and rebuilds on restart: a shared
    /// writable mmap of them is allowed, and what is written through memory
    /// is not modelled.
    pub volatile: Vec<String>,
}

impl ReplayOptions {
    /// Checks the volatile globs: an error names the first invalid one.
    pub fn validate(&self) -> Result<(), String> {
        for p in &self.volatile {
            globset::Glob::new(p).map_err(|e| format!("--volatile `{p}`: {e}"))?;
        }
        Ok(())
    }

    /// The volatile globs as one set.
    fn volatile_set(&self) -> Result<globset::GlobSet, ReplayError> {
        let bad = |message: String| Fault::new(ReplayErrorKind::Options, message).at(0, None);
        let mut volatile = globset::GlobSetBuilder::new();
        for p in &self.volatile {
            volatile.add(globset::Glob::new(p).map_err(|e| bad(format!("--volatile `{p}`: {e}")))?);
        }
        volatile
            .build()
            .map_err(|e| bad(format!("--volatile: {e}")))
    }
}

/// [`replay`] with options. Fails with a message naming the pattern when a
/// volatile glob is invalid.
pub fn replay_with(
    log: &[u8],
    tree: &Tree,
    dir: &[u8],
    opts: &ReplayOptions,
) -> Result<Replayed, ReplayError> {
    replay_with_output(log, tree, dir, opts, 1)
}

/// [`replay_with`], with the first process's fd `output_fd` (inherited
/// from the recorder) as the output stream whose lines are promises,
/// instead of standard output.
///
/// ```
/// use blackout_oplog::tree::Tree;
/// use blackout_record::replay::{replay_with_output, ReplayOptions};
///
/// // "x" on stdout is not output; "saved" on the inherited fd 63 is.
/// let log = b"1 write(1, \"\\x78\\x0a\", 2) = 2\n\
///             1 write(63, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n";
/// let r = replay_with_output(log, &Tree::default(), b"/d", &ReplayOptions::default(), 63).unwrap();
/// assert_eq!(r.data.in_memory(), Some(&b"saved\n"[..]));
/// ```
pub fn replay_with_output(
    log: &[u8],
    tree: &Tree,
    dir: &[u8],
    opts: &ReplayOptions,
    output_fd: i64,
) -> Result<Replayed, ReplayError> {
    replay_streaming(log, tree, dir, opts, output_fd, None, &mut || {})
}

/// [`replay_with_output`] for a recording's log, however large: the bytes
/// written and printed go to `data_file` (an empty temporary file) as they
/// are decoded, file contents naming them there, and `shed()` is called
/// after every [`strace::SHED_BYTES`] of the log read (a caller that mapped
/// the log drops its pages there), so that memory does not grow with the
/// bytes written.
pub fn replay_streaming(
    log: &[u8],
    tree: &Tree,
    dir: &[u8],
    opts: &ReplayOptions,
    output_fd: i64,
    data_file: Option<std::fs::File>,
    shed: &mut dyn FnMut(),
) -> Result<Replayed, ReplayError> {
    let volatile = opts.volatile_set()?;
    let parsed = strace::parse_log_shedding(log, shed)?;
    let mut m = FsModel::new(tree, dir, volatile);
    m.set_output_fd(output_fd);
    if let Some(file) = data_file {
        m.set_data_file(file);
    }
    // Reading a call's text touches its pages again.
    let mut unshed = 0;
    let mut read = |n: usize| {
        unshed += n;
        if unshed >= strace::SHED_BYTES {
            shed();
            unshed = 0;
        }
    };
    // A child's first call may complete before the call that created it
    // returns: the model learns of every creation first.
    for (idx, ev) in parsed.events.iter().enumerate() {
        if let Event::Call(c) = ev {
            read(c.text.len().min(4096));
            if let Some(spawn) = decode::spawn(c) {
                m.expect_spawn(idx, c.pid, &spawn);
            }
        }
    }
    for (idx, ev) in parsed.events.iter().enumerate() {
        match ev {
            Event::Call(c) => {
                read(c.text.len());
                let at = |f: Fault| f.at(c.line, Some(c.name_str()));
                m.ensure_proc(c.pid).map_err(at)?;
                let call = decode::decode(c).map_err(at)?;
                m.apply(call, idx).map_err(at)?;
            }
            Event::Exit(x) => m.exit(x.pid),
            Event::Unfinished(c) => m
                .unfinished(c.pid, &decode::touched(c))
                .map_err(|f| f.at(c.line, Some(c.name_str())))?,
        }
    }
    let mut replayed = m.finish();
    replayed.stats.lines = parsed.stats.lines;
    replayed.stats.calls = parsed.stats.calls;
    replayed.stats.skipped = parsed.stats.skipped;
    Ok(replayed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blackout_oplog::ops::{OpKind, ROOT_INO};
    use blackout_oplog::tree::Node;

    const DIR: &str = "/t/d";

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("\\x{b:02x}")).collect()
    }

    fn run(lines: &[String]) -> Result<Replayed, ReplayError> {
        let log = lines.join("\n") + "\n";
        replay(log.as_bytes(), &Tree::default(), DIR.as_bytes())
    }

    #[test]
    fn a_streamed_replay_stores_the_data_in_its_file_and_sheds_the_log_as_it_goes() {
        // 18 writes of 1 MiB: a 72 MiB log, past the shedding interval.
        let block: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let text: String = block.iter().map(|b| format!("\\x{b:02x}")).collect();
        let mut log = format!(
            "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3\n",
            hex("big")
        );
        for _ in 0..18 {
            log.push_str(&format!("1 write(3, \"{text}\", 1048576) = 1048576\n"));
        }
        log.push_str(&format!("1 write(1, \"{}\", 3) = 3\n", hex("ok\n")));
        let tree = Tree::default();
        let in_memory = replay(log.as_bytes(), &tree, DIR.as_bytes()).unwrap();
        let mut sheds = 0;
        let streamed = replay_streaming(
            log.as_bytes(),
            &tree,
            DIR.as_bytes(),
            &ReplayOptions::default(),
            1,
            Some(tempfile::tempfile().unwrap()),
            &mut || sheds += 1,
        )
        .unwrap();
        // Once parsing, once decoding, at least.
        assert!(sheds >= 2, "{sheds} sheds");
        assert!(streamed.data.is_file() && streamed.data.in_memory().is_none());
        assert_eq!(streamed.data.len(), 18 << 20 | 3);
        assert_eq!(streamed.data, in_memory.data);
        assert_eq!(streamed.ops, in_memory.ops);
        assert_eq!(streamed.final_inodes, in_memory.final_inodes);
        assert_eq!(streamed.final_inodes[1].data.read(17 << 20, 3), block[..3]);
    }

    fn labels(r: &Replayed) -> Vec<String> {
        r.ops
            .iter()
            .map(|o| o.kind.label(|i| r.inodes[i as usize]).to_string())
            .collect()
    }

    #[test]
    fn an_output_fd_carries_the_promises_and_stdout_is_not_output() {
        let log = [
            format!("1 write(1, \"{}\", 8) = 8", hex("running\n")),
            format!("1 write(63</s/out>, \"{}\", 6) = 6", hex("saved\n")),
        ]
        .join("\n")
            + "\n";
        let opts = ReplayOptions::default();
        let r = replay_with_output(log.as_bytes(), &Tree::default(), DIR.as_bytes(), &opts, 63)
            .unwrap();
        assert_eq!(labels(&r), ["output"]);
        assert_eq!(r.data.in_memory(), Some(&b"saved\n"[..]));
        let plain = replay(log.as_bytes(), &Tree::default(), DIR.as_bytes()).unwrap();
        assert_eq!(plain.data.in_memory(), Some(&b"running\n"[..]));
    }

    #[test]
    fn create_write_fsync_rename() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3",
                hex("a.tmp")
            ),
            format!("1 write(3, \"{}\", 5) = 5", hex("hello")),
            "1 fsync(3) = 0".into(),
            "1 close(3) = 0".into(),
            format!("1 rename(\"{}\", \"{}\") = 0", hex("a.tmp"), hex("a")),
            format!("1 write(1, \"{}\", 6) = 6", hex("saved\n")),
        ])
        .unwrap();
        assert_eq!(labels(&r), ["create", "write", "fsync", "rename", "output"]);
        let OpKind::Write { ino, off, data } = r.ops[1].kind.clone() else {
            panic!()
        };
        assert_eq!((ino, off), (1, 0));
        assert_eq!(&*r.data.get(data), b"hello");
    }

    #[test]
    fn paths_outside_are_ignored_and_counted() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("/etc/x")
            ),
            format!("1 write(3, \"{}\", 1) = 1", hex("a")),
            format!("1 mkdir(\"{}\", 0755) = 0", hex("../escape")),
            format!("1 symlink(\"{}\", \"{}\") = 0", hex("/etc"), hex("l")),
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 4",
                hex("l/passwd")
            ),
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 5",
                hex("../d/in")
            ),
        ])
        .unwrap();
        assert_eq!(labels(&r), ["symlink", "create"]);
        assert_eq!(r.stats.outside, 4);
    }

    #[test]
    fn divergence_is_an_error_with_the_line() {
        let e = run(&[format!("1 unlink(\"{}\") = 0", hex("nope"))]).unwrap_err();
        assert_eq!(e.line, 1);
        assert_eq!(e.syscall.as_deref(), Some("unlink"));
        assert_eq!(e.kind, ReplayErrorKind::Divergence);
    }

    #[test]
    fn errors_carry_their_kind_and_keep_their_text() {
        let e = run(&["hello".into()]).unwrap_err();
        assert_eq!(e.kind, ReplayErrorKind::Parse);
        assert_eq!(e.to_string(), "1: not a strace line: `hello`");
        // A write through an unknown fd: its data never matters.
        run(&[format!("1 write(3, \"{}\"..., 4) = 4", hex("ab"))]).unwrap();
        let e = run(&["1 unlink(NULL) = 0".into()]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "1: unlink: argument 1 is not a string: `NULL`"
        );
        assert_eq!(e.kind, ReplayErrorKind::Malformed);
        let e = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("f")
            ),
            format!("1 write(3, \"{}\"..., 4) = 4", hex("ab")),
        ])
        .unwrap_err();
        assert_eq!(e.kind, ReplayErrorKind::Truncated);
        assert_eq!(
            e.to_string(),
            "2: write: wrote 4 bytes but strace kept only 2 (raise its string limit, -s)"
        );
        let e = run(&["2 sync() = 0".into(), "3 sync() = 0".into()]).unwrap_err();
        assert_eq!(e.kind, ReplayErrorKind::UnknownProcess);
        let e = run(&["1 io_uring_setup(8, 0x7ffd) = 3".into()]).unwrap_err();
        assert_eq!(e.kind, ReplayErrorKind::Unmodelable);
        let opts = ReplayOptions {
            volatile: vec!["a[".into()],
        };
        let e = replay_with(b"", &Tree::default(), DIR.as_bytes(), &opts).unwrap_err();
        assert_eq!((e.kind, e.line), (ReplayErrorKind::Options, 0));
    }

    #[test]
    fn an_empty_close_range_closes_nothing() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("f")
            ),
            "1 close_range(5, 3, 0) = 0".into(),
            format!("1 write(3, \"{}\", 1) = 1", hex("a")),
        ])
        .unwrap();
        assert_eq!(labels(&r), ["create", "write"]);
    }

    #[test]
    fn append_uses_the_model_size_and_fork_shares_offsets() {
        let r = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3",
                hex("log")
            ),
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_APPEND) = 4",
                hex("log")
            ),
            format!("1 write(3, \"{}\", 2) = 2", hex("ab")),
            format!("1 write(4, \"{}\", 2) = 2", hex("cd")),
            format!("1 openat(AT_FDCWD, \"{}\", O_WRONLY) = 5", hex("log")),
            "1 clone(child_stack=NULL, flags=SIGCHLD) = 2".into(),
            format!("2 write(5, \"{}\", 1) = 1", hex("x")),
            format!("1 write(5, \"{}\", 1) = 1", hex("y")),
        ])
        .unwrap();
        let offs: Vec<u64> = r
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Write { off, .. } => Some(off),
                _ => None,
            })
            .collect();
        assert_eq!(offs, [0, 2, 0, 1]);
    }

    #[test]
    fn o_trunc_empties_the_file_even_when_opened_read_only() {
        let mut tree = Tree::default();
        tree.nodes.push(Node::File(b"old bytes".to_vec()));
        tree.entries.push(blackout_oplog::tree::Entry {
            dir: ROOT_INO,
            name: "f".into(),
            ino: 1,
        });
        let log = format!(
            "1 openat(AT_FDCWD, \"{}\", O_RDONLY|O_TRUNC) = 3\n",
            hex("f")
        );
        let r = replay(log.as_bytes(), &tree, DIR.as_bytes()).unwrap();
        assert_eq!(labels(&r), ["truncate"]);
        assert_eq!(r.ops[0].kind, OpKind::Truncate { ino: 1, size: 0 });
    }

    #[test]
    fn an_unfinished_call_is_refused_only_when_it_touches_the_directory() {
        // A write to stdout (fd 1) cut short: harmless.
        run(&[
            format!("1 write(1, \"{}\", 2 <unfinished ...>", hex("ab")),
            "1 +++ killed by SIGKILL +++".into(),
        ])
        .unwrap();
        // A data string that happens to name a file, and a count that happens
        // to equal an open fd, do not count.
        run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("f")
            ),
            format!("1 write(1, \"{}\", 3 <unfinished ...>", hex("f")),
        ])
        .unwrap();
        let e = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_WRONLY|O_CREAT, 0644) = 3",
                hex("f")
            ),
            format!("1 write(3, \"{}\", 2) = ?", hex("ab")),
        ])
        .unwrap_err();
        assert_eq!(e.line, 2);
        let e = run(&[
            "1 sync() = 0".into(),
            format!("1 unlink(\"{}\" <unfinished ...>", hex("x")),
        ])
        .unwrap_err();
        assert!(e.message.contains("never completed"), "{e}");
    }

    #[test]
    fn unmodelable_calls_are_refused() {
        let e = run(&[
            format!(
                "1 openat(AT_FDCWD, \"{}\", O_RDWR|O_CREAT, 0644) = 3",
                hex("m")
            ),
            "1 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_SHARED, 3, 0) = 0x7f0000000000".into(),
        ])
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("shared and writable"), "{e}");
        let e = run(&[format!(
            "1 write(7<{}>, \"{}\", 1) = 1",
            hex("/t/d/f"),
            hex("a")
        )])
        .unwrap_err();
        assert!(e.message.contains("origin"), "{e}");
        assert_eq!(e.kind, ReplayErrorKind::UnknownFd);
    }
}
