//! Promises: what the workload printed to standard output, and which lines
//! of it (promises) were made before each crash point.
//!
//! A line of output is a promise (`--ack-prefix` narrows them to lines
//! starting with a prefix). A promise is made by the output op that printed
//! its newline; an unterminated last line counts only once the workload has
//! ended.

use crate::ops::OpKind;
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
                stream.extend_from_slice(&trace.bytes(data));
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
                volatile: false,
            });
            data.extend_from_slice(p.as_bytes());
        }
        let trace = Trace {
            ops,
            data: crate::blob::Blob::from_vec(data),
            ..Trace::default()
        };
        Outputs::new(&trace, prefix.map(str::as_bytes))
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
    fn the_ack_prefix_narrows_promises() {
        let o = outputs(&["log: x\nACK 1\n", "ACK 2\n"], Some("ACK"));
        assert_eq!(o.all_promises(), vec![&b"ACK 1"[..], b"ACK 2"]);
        assert_eq!(o.promises_text(1), b"ACK 1\n");
    }
}
