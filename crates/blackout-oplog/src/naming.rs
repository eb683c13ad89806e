//! Naming ops in the user's terms: the path as the program named it, the
//! directories as they were when an op ran, rename halves, the syscall and
//! where the call was (its log line, or its call number in a native
//! recording: [`line_words`]).

use std::collections::HashMap;

use crate::ops::{escape_controls, Ino, InodeKind, OpKind, Part, Unit, ROOT_INO};
use crate::trace::{Numbering, Trace};

/// Where calls were, in words, from their numbers ([`crate::ops::Op::line`]:
/// `first` to `last`, one call when they are equal) and what those count:
/// `log line 25`, `log lines 7-8` in a recording made under strace,
/// `call 25`, `calls 7-8` in a native one. Every report names an op's place
/// through it.
///
/// ```
/// use blackout_oplog::naming::line_words;
/// use blackout_oplog::trace::Numbering;
///
/// assert_eq!(line_words(Numbering::LogLine, 224, 224), "log line 224");
/// assert_eq!(line_words(Numbering::Call, 7, 8), "calls 7-8");
/// ```
pub fn line_words(numbering: Numbering, first: u32, last: u32) -> String {
    let (one, many) = match numbering {
        Numbering::LogLine => ("log line", "log lines"),
        Numbering::Call => ("call", "calls"),
    };
    if first == last {
        format!("{one} {first}")
    } else {
        format!("{many} {first}-{last}")
    }
}

/// The paths of directories, as they were when each op ran.
pub struct DirPaths {
    paths: HashMap<Ino, String>,
}

impl DirPaths {
    /// Directory paths just before op `upto`.
    pub fn at(trace: &Trace, upto: usize) -> DirPaths {
        let mut paths = HashMap::from([(ROOT_INO, String::new())]);
        let join = |paths: &HashMap<Ino, String>, dir: Ino, name: &str| match paths.get(&dir) {
            Some(p) if p.is_empty() => name.to_string(),
            Some(p) => format!("{p}/{name}"),
            None => format!("?/{name}"),
        };
        for e in &trace.initial_entries {
            if trace.kind(e.ino) == InodeKind::Dir {
                let p = join(&paths, e.dir, &e.name.display());
                paths.entry(e.ino).or_insert(p);
            }
        }
        for op in &trace.ops[..upto.min(trace.ops.len())] {
            match &op.kind {
                OpKind::Link { dir, name, ino, .. } if trace.kind(*ino) == InodeKind::Dir => {
                    let p = join(&paths, *dir, &name.display());
                    paths.entry(*ino).or_insert(p);
                }
                OpKind::Rename {
                    to_dir,
                    to_name,
                    ino,
                    ..
                } if trace.kind(*ino) == InodeKind::Dir => {
                    let p = join(&paths, *to_dir, &to_name.display());
                    paths.insert(*ino, p);
                }
                _ => {}
            }
        }
        DirPaths { paths }
    }

    /// The path of directory `dir` (`.` for the directory under test).
    pub fn dir(&self, dir: Ino) -> String {
        match self.paths.get(&dir) {
            Some(p) if p.is_empty() => ".".into(),
            Some(p) => p.clone(),
            None => format!("(directory inode {dir})"),
        }
    }

    /// The path of entry `name` in directory `dir`.
    pub fn entry(&self, dir: Ino, name: &str) -> String {
        match self.paths.get(&dir) {
            Some(p) if p.is_empty() => name.to_string(),
            Some(p) => format!("{p}/{name}"),
            None => format!("(directory inode {dir})/{name}"),
        }
    }
}

/// The source and destination paths of rename op `i`, as they were when it
/// ran, control characters escaped.
pub fn rename_paths(trace: &Trace, i: usize) -> Option<(String, String)> {
    let OpKind::Rename {
        from_dir,
        from_name,
        to_dir,
        to_name,
        ..
    } = &trace.ops[i].kind
    else {
        return None;
    };
    let paths = DirPaths::at(trace, i);
    Some((
        escape_controls(&paths.entry(*from_dir, &from_name.display())),
        escape_controls(&paths.entry(*to_dir, &to_name.display())),
    ))
}

/// An op (or one half of a rename) in the user's terms:
/// `op 6: rename doc.txt.tmp -> doc.txt (rename, log line 25)` (`call 25`
/// in a native recording).
pub fn describe_unit(trace: &Trace, unit: Unit) -> String {
    describe_unit_numbered(trace, unit, unit.op)
}

/// As [`describe_unit`], showing the op as number `shown` (its number in the
/// recorded trace when `trace` has an added sync).
pub fn describe_unit_numbered(trace: &Trace, unit: Unit, shown: usize) -> String {
    let op = &trace.ops[unit.op];
    let paths = DirPaths::at(trace, unit.op);
    let path = trace.show_path(&op.path);
    let what = match &op.kind {
        OpKind::Write { off, data, .. } => {
            format!("write of {} bytes at offset {off} to {path}", data.len)
        }
        OpKind::Truncate { size, .. } => format!("truncate of {path} to {size} bytes"),
        OpKind::Fallocate { off, len, .. } => {
            format!("fallocate of {path}, {len} bytes at offset {off}")
        }
        OpKind::Link { .. } | OpKind::Unlink { .. } => {
            format!("{} {path}", op.kind.label(|i| trace.kind(i)))
        }
        OpKind::Rename {
            from_dir, to_dir, ..
        } => {
            let (from, to) = rename_paths(trace, unit.op).unwrap_or_default();
            let label = op.kind.label(|i| trace.kind(i));
            match unit.part {
                Part::Whole => format!("{label} {from} -> {to}"),
                Part::Source => format!(
                    "the removal of {from} from {} (half of {label} {from} -> {to})",
                    escape_controls(&paths.dir(*from_dir))
                ),
                Part::Dest => format!(
                    "the new entry {to} in {} (half of {label} {from} -> {to})",
                    escape_controls(&paths.dir(*to_dir))
                ),
            }
        }
        OpKind::Output { data } => {
            let text = trace.bytes(*data).escape_ascii().to_string();
            let short: String = text.chars().take(40).collect();
            let more = if text.chars().count() > 40 { "..." } else { "" };
            format!("output \"{short}{more}\" to standard output")
        }
        other => format!("{} {path}", other.label(|i| trace.kind(i))),
    };
    let from = op
        .origin
        .as_ref()
        .map(|o| format!(", from {}", escape_controls(&o.describe())))
        .unwrap_or_default();
    format!(
        "op {shown}: {what} ({}, {}{from})",
        op.syscall,
        line_words(trace.numbering, op.line, op.line)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_is_named_by_what_the_trace_numbers() {
        for (numbering, one, range) in [
            (Numbering::LogLine, "log line 12", "log lines 140-162"),
            (Numbering::Call, "call 12", "calls 140-162"),
        ] {
            assert_eq!(line_words(numbering, 12, 12), one);
            assert_eq!(line_words(numbering, 140, 162), range);
        }
        // A trace that does not say is numbered by log line.
        assert_eq!(line_words(Trace::default().numbering, 0, 0), "log line 0");
    }

    #[test]
    fn an_op_is_described_with_its_place_as_the_trace_numbers_it() {
        let mut trace = Trace {
            dir: "/d".into(),
            inodes: vec![InodeKind::Dir, InodeKind::File],
            initial_inodes: 1,
            ops: vec![crate::ops::Op {
                kind: OpKind::Link {
                    dir: ROOT_INO,
                    name: "a".into(),
                    ino: 1,
                    new: true,
                },
                syscall: "openat".into(),
                pid: 1,
                line: 9,
                path: "/d/a".into(),
                stack: Vec::new(),
                origin: None,
                volatile: false,
            }],
            ..Trace::default()
        };
        let unit = Unit {
            op: 0,
            part: Part::Whole,
        };
        assert_eq!(
            describe_unit(&trace, unit),
            "op 0: create a (openat, log line 9)"
        );
        trace.numbering = Numbering::Call;
        assert_eq!(
            describe_unit(&trace, unit),
            "op 0: create a (openat, call 9)"
        );
    }
}
