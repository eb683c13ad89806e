//! Promises: what the workload printed to standard output, and which lines
//! of it (promises) were made before each crash point.
//!
//! The promise rule ([`PromiseRule`]), one for every way blackout reads a
//! program's output (a recorded run's output ops, the block backend's marks,
//! a soak's client): a promise is a whole line, ended by its newline
//! (`--ack-prefix` narrows them to lines starting with a prefix; a trailing
//! `\r` is not part of it; an empty line promises nothing). A last line
//! without a newline counts only when the process that printed it exited
//! normally: a process killed while printing `ok 12` has promised nothing by
//! `ok 1`. In a recorded run, a promise is made by the output op that
//! printed its newline.

use crate::ops::OpKind;
use crate::trace::Trace;

/// Which lines of a program's output are promises.
///
/// ```
/// use blackout_oplog::promises::PromiseRule;
/// let every = PromiseRule::new(None);
/// assert_eq!(every.of_line(b"saved\r"), Some(&b"saved"[..]));
/// assert_eq!(every.of_line(b""), None);
/// let acks = PromiseRule::new(Some(b"ok "));
/// assert_eq!(acks.of_line(b"ok 12"), Some(&b"ok 12"[..]));
/// assert_eq!(acks.of_line(b"log: ok"), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromiseRule {
    prefix: Option<Vec<u8>>,
}

impl PromiseRule {
    /// The rule: every non-empty line, or with `prefix` only the lines
    /// starting with it.
    pub fn new(prefix: Option<&[u8]>) -> PromiseRule {
        PromiseRule {
            prefix: prefix.map(<[u8]>::to_vec),
        }
    }

    /// The promise a whole line (without its newline) makes, if any: the
    /// line without a trailing `\r`.
    pub fn of_line<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let promised = match &self.prefix {
            Some(p) => line.starts_with(p),
            None => !line.is_empty(),
        };
        promised.then_some(line)
    }

    /// The promises whole `lines` (each without its newline) make, as
    /// text.
    ///
    /// ```
    /// use blackout_oplog::promises::PromiseRule;
    /// let rule = PromiseRule::new(Some(b"ok "));
    /// let lines: [&[u8]; 3] = [b"ok 1\r", b"progress", b"ok 2"];
    /// assert_eq!(rule.promises(lines), ["ok 1", "ok 2"]);
    /// ```
    pub fn promises<'a>(&self, lines: impl IntoIterator<Item = &'a [u8]>) -> Vec<String> {
        lines
            .into_iter()
            .filter_map(|l| self.of_line(l))
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }

    /// Whether a last line without a newline counts: only when the process
    /// that printed it exited normally (not killed by a signal).
    pub fn tail_counts(exited_normally: bool) -> bool {
        exited_normally
    }
}

/// Whole lines out of output read in pieces: each line is handed on once
/// its newline arrives; what follows the last newline waits.
///
/// ```
/// use blackout_oplog::promises::LineBuffer;
/// let mut b = LineBuffer::default();
/// let mut lines = Vec::new();
/// b.push(b"ok 1\nok 2\nok ", |l| lines.push(l.to_vec()));
/// assert_eq!(lines, [b"ok 1".to_vec(), b"ok 2".to_vec()]);
/// // Killed while printing `ok 3`: no line, no promise.
/// assert_eq!(b.finish(false), None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct LineBuffer {
    partial: Vec<u8>,
}

impl LineBuffer {
    /// Takes `bytes`, calling `line` with each line they complete (without
    /// its newline).
    pub fn push(&mut self, bytes: &[u8], mut line: impl FnMut(&[u8])) {
        let mut rest = bytes;
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            if self.partial.is_empty() {
                line(&rest[..nl]);
            } else {
                self.partial.extend_from_slice(&rest[..nl]);
                line(&self.partial);
                self.partial.clear();
            }
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
    }

    /// The output ended: its last line without a newline, if there is one
    /// and it counts ([`PromiseRule::tail_counts`]).
    pub fn finish(self, exited_normally: bool) -> Option<Vec<u8>> {
        (PromiseRule::tail_counts(exited_normally) && !self.partial.is_empty())
            .then_some(self.partial)
    }
}

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
    rule: PromiseRule,
    /// Every promise, in order: the op that completed it, the line, and
    /// whether it ended with a newline (an unterminated last line counts
    /// only once the workload has ended).
    promises: Vec<Promise>,
}

impl Outputs {
    /// Collects the output ops of a trace. With `ack_prefix`, only lines
    /// starting with it are promises ([`PromiseRule`]); an unterminated last
    /// line counts (once the workload ended) when the workload exited
    /// normally.
    pub fn new(trace: &Trace, ack_prefix: Option<&[u8]>) -> Outputs {
        let mut stream = Vec::new();
        let mut upto = Vec::with_capacity(trace.ops.len() + 1);
        upto.push(0);
        for op in &trace.ops {
            if let OpKind::Output { data } = op.kind {
                stream.extend_from_slice(&trace.bytes(data));
            }
            upto.push(stream.len());
        }
        let mut out = Outputs {
            stream,
            upto,
            rule: PromiseRule::new(ack_prefix),
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
                if let Some(line) = self.rule.of_line(&self.stream[start..end]) {
                    found.push(Promise {
                        op: i,
                        line: line.to_vec(),
                        terminated: true,
                    });
                }
                start = end + 1;
            }
        }
        let exited_normally = trace.exit.code.is_some();
        if let (Some(i), true) = (last_output, PromiseRule::tail_counts(exited_normally)) {
            if let Some(line) = self.rule.of_line(&self.stream[start..]) {
                found.push(Promise {
                    op: i,
                    line: line.to_vec(),
                    terminated: false,
                });
            }
        }
        found
    }

    /// The promises made before crash point `k`.
    fn promise_iter(&self, k: usize) -> impl Iterator<Item = &Promise> {
        let finished = k + 1 >= self.upto.len();
        self.promises
            .iter()
            .take_while(move |p| p.op < k)
            .filter(move |p| p.terminated || finished)
    }

    /// How many promises were made before crash point `k` (those
    /// [`Outputs::promises_at`] gives), in time logarithmic in them.
    pub fn promise_count(&self, k: usize) -> usize {
        let finished = k + 1 >= self.upto.len();
        let n = self.promises.partition_point(|p| p.op < k);
        match self.promises[..n].last() {
            Some(p) if !p.terminated && !finished => n - 1,
            _ => n,
        }
    }

    /// The latest promise made before crash point `k`: the op that completed
    /// it, and the line.
    pub fn latest_promise_before(&self, k: usize) -> Option<(usize, &[u8])> {
        self.promise_iter(k)
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
    pub fn promises_at(&self, k: usize) -> Vec<&[u8]> {
        self.promise_iter(k).map(|p| p.line.as_slice()).collect()
    }

    /// Every promise the workload made, in order, with the op that
    /// completed it (for an unterminated last line, the last output op).
    pub fn each_promise(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.promises.iter().map(|p| (p.op, p.line.as_slice()))
    }

    /// All promises the workload made.
    pub fn all_promises(&self) -> Vec<&[u8]> {
        self.promises_at(self.upto.len() - 1)
    }

    /// The promises before crash point `k` as text, one per line (a NUL,
    /// which no environment variable can hold, is shown as `\0`).
    pub fn promises_text(&self, k: usize) -> Vec<u8> {
        join_lines(&self.promises_at(k))
    }
}

/// Promises as text, one per line (NUL shown as `\\0`).
pub fn join_lines(lines: &[&[u8]]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{DataRef, Op};

    /// A trace that printed `pieces`, one output op each, and ended as
    /// `exit` says.
    fn printed(pieces: &[&str], exit: crate::trace::WorkloadExit) -> Trace {
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
                volatile: false,
            });
            data.extend_from_slice(p.as_bytes());
        }
        Trace {
            ops,
            data: crate::blob::Blob::from_vec(data),
            exit,
            ..Trace::default()
        }
    }

    fn exited(code: i32) -> crate::trace::WorkloadExit {
        crate::trace::WorkloadExit {
            code: Some(code),
            signal: None,
        }
    }

    fn outputs(pieces: &[&str], prefix: Option<&str>) -> Outputs {
        Outputs::new(&printed(pieces, exited(0)), prefix.map(str::as_bytes))
    }

    #[test]
    fn promises_are_complete_lines_before_the_crash() {
        let o = outputs(&["start\nsav", "ed\n", "tail"], None);
        assert!(o.promises_at(0).is_empty());
        assert_eq!(o.promises_at(1), vec![&b"start"[..]]);
        assert_eq!(o.promises_at(2), vec![&b"start"[..], b"saved"]);
        // The workload ended: its unterminated last line counts.
        assert_eq!(o.all_promises(), vec![&b"start"[..], b"saved", b"tail"]);
        assert_eq!(o.output_at(1), b"start\nsav");
        assert_eq!(o.latest_promise_before(1), Some((0, &b"start"[..])));
        assert_eq!(o.latest_promise_before(2), Some((1, &b"saved"[..])));
        assert_eq!(o.latest_promise_before(3), Some((2, &b"tail"[..])));
        assert_eq!(o.latest_promise_before(0), None);
    }

    #[test]
    fn the_promise_count_is_the_promises_made_before_each_crash_point() {
        for (writes, prefix) in [
            (&["start\nsav", "ed\n", "tail"][..], None),
            (&["a\nb\n", "", "c\nd", "\n"][..], None),
            (&["log: x\nACK 1\n", "ACK 2\n", "ACK 3"][..], Some("ACK")),
            (&[][..], None),
        ] {
            let o = outputs(writes, prefix);
            for k in 0..=writes.len() + 1 {
                assert_eq!(
                    o.promise_count(k),
                    o.promises_at(k).len(),
                    "{writes:?} c{k}"
                );
            }
        }
    }

    #[test]
    fn an_unterminated_last_line_of_a_killed_workload_is_no_promise() {
        let pieces = ["ok 1\nok 2\nok ", "1"];
        let o = Outputs::new(&printed(&pieces, exited(1)), None);
        assert_eq!(o.all_promises(), vec![&b"ok 1"[..], b"ok 2", b"ok 1"]);
        let killed = crate::trace::WorkloadExit {
            code: None,
            signal: Some("SIGKILL".into()),
        };
        let o = Outputs::new(&printed(&pieces, killed), None);
        assert_eq!(o.all_promises(), vec![&b"ok 1"[..], b"ok 2"]);
        assert_eq!(o.promise_count(pieces.len()), 2);
    }

    #[test]
    fn a_line_buffer_hands_on_whole_lines_across_pieces() {
        let mut b = LineBuffer::default();
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for piece in [&b"a"[..], b"b\n\nc", b"\r\n", b"tail"] {
            b.push(piece, |l| lines.push(l.to_vec()));
        }
        assert_eq!(lines, [b"ab".to_vec(), b"".to_vec(), b"c\r".to_vec()]);
        let rule = PromiseRule::new(None);
        let promised: Vec<&[u8]> = lines.iter().filter_map(|l| rule.of_line(l)).collect();
        assert_eq!(promised, [&b"ab"[..], b"c"]);
        assert_eq!(b.clone().finish(true), Some(b"tail".to_vec()));
        assert_eq!(b.finish(false), None);
    }

    #[test]
    fn the_ack_prefix_narrows_promises() {
        let o = outputs(&["log: x\nACK 1\n", "ACK 2\n"], Some("ACK"));
        assert_eq!(o.all_promises(), vec![&b"ACK 1"[..], b"ACK 2"]);
        assert_eq!(o.promises_text(1), b"ACK 1\n");
    }
}
