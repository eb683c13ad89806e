//! The fix no sync can be: an update made in place, made atomic.
//!
//! A file truncated and rewritten, or appended to, passes through states
//! its recovery may reject whatever is synced: a crash between the
//! truncate and the write leaves it empty. The fix programs use is to
//! write the new contents to a new file beside it, fsync that, rename it
//! over the file and fsync the directory. [`propose`] finds the update a
//! not-atomic or torn cause belongs to (the data ops on one file between
//! two promises or syncs of it); [`with_fixes`] rewrites a trace as the
//! program with that fix would have run, so the driver can verify it like
//! a sync: the same ops on a new inode (after a copy of what the file held,
//! when the update does not start by emptying it), then `fsync(new)`, the
//! rename over the old name and `fsync(dir)`; every later op on the file
//! acts on the new inode, as the program's descriptor would.
//!
//! ```
//! use blackout_analysis::replace::{propose, with_fixes};
//! use blackout_oplog::ops::test_ops::{op, write};
//! use blackout_oplog::ops::{InodeKind, OpKind};
//! use blackout_oplog::promises::Outputs;
//! use blackout_oplog::trace::Trace;
//! use blackout_oplog::tree::Entry;
//!
//! // config (inode 1) emptied and written again where it is.
//! let t = Trace {
//!     inodes: vec![InodeKind::Dir, InodeKind::File],
//!     initial_inodes: 2,
//!     initial_entries: vec![Entry { dir: 0, name: "config".into(), ino: 1 }],
//!     ops: vec![op(OpKind::Truncate { ino: 1, size: 0 }), write(1)],
//!     ..Trace::default()
//! };
//! let outputs = Outputs::new(&t, None);
//! let r = propose(&t, &outputs, 1).unwrap();
//! assert_eq!((r.first, r.last), (0, 1));
//! let (fixed, added) = with_fixes(&t, &[], &[r]);
//! // The new file's create, its fsync, the rename over config and the
//! // fsync of the directory (nothing to copy: the update empties it).
//! assert_eq!(added.len(), 4);
//! assert_eq!(fixed.ops.len(), t.ops.len() + 4);
//! ```

use std::collections::HashMap;

use serde::Serialize;

use blackout_oplog::naming::line_words;
use blackout_oplog::ops::{Ino, InodeKind, Name, Op, OpKind, ROOT_INO};
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

use crate::explain::{self, SyncFix};

/// An update in place made atomic: file `ino`'s ops `first..=last` write a
/// new file in the same directory instead, which is fsynced, renamed over
/// `name` and its directory fsynced.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Replace {
    /// The file updated in place.
    pub ino: Ino,
    /// The first op of the update.
    pub first: usize,
    /// The last.
    pub last: usize,
    /// The file's directory when the update ends.
    pub dir: Ino,
    /// Its name there.
    pub name: Name,
    /// Its path, for people.
    pub path: String,
}

/// The suffix of the new file's name.
pub const NEW_SUFFIX: &str = ".blackout-new";

impl Replace {
    /// The name of the new file.
    pub fn new_name(&self) -> Name {
        let mut n = self.name.0.clone();
        n.extend_from_slice(NEW_SUFFIX.as_bytes());
        Name(n)
    }

    /// `config.json written whole to a new file config.json.blackout-new,
    /// fsynced, renamed over it and . fsynced, instead of updated in place
    /// (ops 0-1, log lines 7-8)` (`calls 7-8` in a native recording).
    pub fn describe(&self, trace: &Trace) -> String {
        let ops = if self.first == self.last {
            format!("op {}", self.first)
        } else {
            format!("ops {}-{}", self.first, self.last)
        };
        let (a, b) = (trace.ops[self.first].line, trace.ops[self.last].line);
        let lines = line_words(trace.numbering, a, b);
        let dir = match self.path.rsplit_once('/') {
            Some((d, _)) if !d.is_empty() => d,
            _ => ".",
        };
        format!(
            "{} written whole to a new file {}{NEW_SUFFIX}, fsynced, renamed over it and {dir} fsynced, instead of updated in place ({ops}, {lines})",
            self.path, self.path
        )
    }
}

/// Whether op `op` ends an update of file `f`: a sync that covers it, an
/// entry op on it (its creation, a rename) or a promise.
fn bounds(op: &Op, j: usize, f: Ino, promises: &[usize]) -> bool {
    match op.kind {
        OpKind::Fsync { ino, .. } | OpKind::Fdatasync { ino, .. } => ino == f,
        OpKind::Sync { .. } => true,
        OpKind::Link { ino, .. } | OpKind::Unlink { ino, .. } => ino == f,
        OpKind::Rename { ino, replaced, .. } => ino == f || replaced == Some(f),
        _ => promises.binary_search(&j).is_ok(),
    }
}

/// The update of a file in place that data op `op` belongs to: the data
/// ops on its file from the first after the previous bound (a promise, a
/// sync of the file, its creation or a rename of it) to the last before
/// the next, when the file has a name in a directory as the update ends.
/// `None` for an op that is not a data op on a regular file.
pub fn propose(trace: &Trace, outputs: &Outputs, op: usize) -> Option<Replace> {
    let f = trace.ops.get(op)?.kind.data_inode()?;
    if trace.inodes.get(f as usize) != Some(&InodeKind::File) {
        return None;
    }
    let promises: Vec<usize> = outputs.each_promise().map(|(p, _)| p).collect();
    let ops = &trace.ops;
    let mut first = op;
    for j in (0..op).rev() {
        if bounds(&ops[j], j, f, &promises) {
            break;
        }
        if ops[j].kind.data_inode() == Some(f) {
            first = j;
        }
    }
    let mut last = op;
    for (j, o) in ops.iter().enumerate().skip(op + 1) {
        if bounds(o, j, f, &promises) {
            break;
        }
        if o.kind.data_inode() == Some(f) {
            last = j;
        }
    }
    let (dir, name) = entry_at(trace, f, last)?;
    Some(Replace {
        ino: f,
        first,
        last,
        dir,
        name,
        path: trace.show_path(&ops[op].path),
    })
}

/// The directory and name inode `f` has after op `upto`: its latest
/// entry, from the initial tree and the entry ops before.
fn entry_at(trace: &Trace, f: Ino, upto: usize) -> Option<(Ino, Name)> {
    let mut names: Vec<(Ino, Name)> = trace
        .initial_entries
        .iter()
        .filter(|e| e.ino == f)
        .map(|e| (e.dir, e.name.clone()))
        .collect();
    for op in trace.ops.iter().take(upto + 1) {
        match &op.kind {
            OpKind::Link { dir, name, ino, .. } if *ino == f => names.push((*dir, name.clone())),
            OpKind::Unlink { dir, name, ino } if *ino == f => {
                names.retain(|(d, n)| (d, n) != (dir, name));
            }
            OpKind::Rename {
                from_dir,
                from_name,
                to_dir,
                to_name,
                ino,
                replaced,
                exchange,
            } => {
                let from = (*from_dir, from_name.clone());
                let to = (*to_dir, to_name.clone());
                if *ino == f {
                    names.retain(|e| *e != from);
                    names.push(to);
                } else if *replaced == Some(f) {
                    names.retain(|e| *e != to);
                    if *exchange {
                        names.push(from);
                    }
                }
            }
            _ => {}
        }
    }
    names.pop()
}

/// A copy of `trace` with each replacement made (the first of those on one
/// file where they overlap) and every sync added ([`explain::with_syncs`],
/// placed by the recorded ops' numbers), and the indices of the added ops
/// in it, ascending.
pub fn with_fixes(trace: &Trace, syncs: &[SyncFix], replaces: &[Replace]) -> (Trace, Vec<usize>) {
    if replaces.is_empty() {
        return explain::with_syncs(trace, syncs);
    }
    let (replaced, mut added, at, renamed) = with_replaces(trace, replaces);
    // The syncs at the new places of the ops they follow or precede, on the
    // new inode for a file replaced from that op on.
    let moved: Vec<SyncFix> = syncs
        .iter()
        .map(|s| SyncFix {
            after: at[s.after],
            before: s.before.map(|b| at[b]),
            ino: renamed
                .iter()
                .find(|(from, f, _)| *f == s.ino && s.after >= *from)
                .map_or(s.ino, |(_, _, t)| *t),
            ..s.clone()
        })
        .collect();
    let (t, sync_added) = explain::with_syncs(&replaced, &moved);
    // with_syncs puts each distinct (place, inode) right after its op: an
    // op at `i` moves by the number placed before it.
    let mut places: Vec<(usize, Ino)> = moved.iter().map(|s| (s.after, s.ino)).collect();
    places.sort_unstable();
    places.dedup();
    for a in &mut added {
        *a += places.partition_point(|p| p.0 < *a);
    }
    added.extend(sync_added);
    added.sort_unstable();
    (t, added)
}

/// The trace with the replacements made; the added ops' indices; where
/// each recorded op (and the end) went; and for each replacement, from
/// which recorded op on which inode became which.
#[allow(clippy::type_complexity)]
fn with_replaces(
    trace: &Trace,
    replaces: &[Replace],
) -> (Trace, Vec<usize>, Vec<usize>, Vec<(usize, Ino, Ino)>) {
    let mut t = trace.clone();
    let mut rs: Vec<&Replace> = Vec::new();
    let mut sorted: Vec<&Replace> = replaces.iter().collect();
    sorted.sort_by_key(|r| (r.first, r.ino));
    for r in sorted {
        let overlaps = rs
            .iter()
            .any(|q| q.ino == r.ino && r.first <= q.last && q.first <= r.last);
        if !overlaps && r.first <= r.last && r.last < trace.ops.len() {
            rs.push(r);
        }
    }
    // Each replacement's new inode.
    let mut renamed: Vec<(usize, Ino, Ino)> = Vec::new();
    for r in &rs {
        let new = u32::try_from(t.inodes.len()).unwrap_or(Ino::MAX);
        t.inodes.push(InodeKind::File);
        renamed.push((r.first, r.ino, new));
    }
    // Ops to put before op `first` and after op `last`.
    let mut before: HashMap<usize, Vec<Op>> = HashMap::new();
    let mut after: HashMap<usize, Vec<Op>> = HashMap::new();
    for (r, &(_, _, new)) in rs.iter().zip(&renamed) {
        let (pre, post) = replacement_ops(trace, r, new);
        before.entry(r.first).or_default().extend(pre);
        after.entry(r.last).or_default().extend(post);
    }
    let n = trace.ops.len();
    let mut ops: Vec<Op> = Vec::with_capacity(n + 8 * rs.len());
    let mut added = Vec::new();
    let mut at = vec![0; n + 1];
    for (i, op) in trace.ops.iter().enumerate() {
        for pre in before.remove(&i).unwrap_or_default() {
            added.push(ops.len());
            ops.push(pre);
        }
        at[i] = ops.len();
        let mut op = op.clone();
        for &(from, f, new) in &renamed {
            if i >= from {
                retarget(&mut op.kind, f, new);
            }
        }
        ops.push(op);
        for post in after.remove(&i).unwrap_or_default() {
            added.push(ops.len());
            ops.push(post);
        }
    }
    at[n] = ops.len();
    // Barriers: a recorded sync's moves with the op it counts to; an added
    // fsync covers everything before it.
    for (i, op) in ops.iter_mut().enumerate() {
        let fresh = added.binary_search(&i).is_ok();
        match &mut op.kind {
            OpKind::Fsync { barrier, .. }
            | OpKind::Fdatasync { barrier, .. }
            | OpKind::Sync { barrier } => {
                *barrier = if fresh { i } else { at[(*barrier).min(n)] };
            }
            _ => {}
        }
    }
    t.ops = ops;
    (t, added, at, renamed)
}

/// The ops replacement `r` adds with its new inode `new`: before its first
/// op, the new file's creation and the copy of what the file held (unless
/// the update starts by emptying it); after its last, `fsync(new)`, the
/// rename over the file and `fsync(dir)`.
fn replacement_ops(trace: &Trace, r: &Replace, new: Ino) -> (Vec<Op>, Vec<Op>) {
    let base = &trace.ops[r.first];
    let new_path = sibling(&base.path, &r.new_name());
    let mk = |kind: OpKind, call: &str, path: &Name, line: u32| Op {
        kind,
        syscall: format!("{call} (added)"),
        pid: base.pid,
        line,
        path: path.clone(),
        stack: Vec::new(),
        origin: None,
        volatile: false,
    };
    let mut pre = vec![mk(
        OpKind::Link {
            dir: r.dir,
            name: r.new_name(),
            ino: new,
            new: true,
        },
        "openat",
        &new_path,
        base.line,
    )];
    if !matches!(base.kind, OpKind::Truncate { size: 0, .. }) {
        if let Some(init) = trace.initial_files.iter().find(|i| i.ino == r.ino) {
            pre.push(mk(
                OpKind::Write {
                    ino: new,
                    off: 0,
                    data: init.data,
                },
                "write",
                &new_path,
                base.line,
            ));
        }
        for op in &trace.ops[..r.first] {
            if op.kind.data_inode() == Some(r.ino) {
                let mut kind = op.kind.clone();
                retarget(&mut kind, r.ino, new);
                pre.push(mk(kind, &op.syscall, &new_path, op.line));
            }
        }
    }
    let end = &trace.ops[r.last];
    let fsync = |ino: Ino, path: &Name| {
        mk(
            OpKind::Fsync {
                ino,
                barrier: 0,
                implied: false,
            },
            "fsync",
            path,
            end.line,
        )
    };
    let post = vec![
        fsync(new, &new_path),
        mk(
            OpKind::Rename {
                from_dir: r.dir,
                from_name: r.new_name(),
                to_dir: r.dir,
                to_name: r.name.clone(),
                ino: new,
                replaced: Some(r.ino),
                exchange: false,
            },
            "rename",
            &new_path,
            end.line,
        ),
        fsync(r.dir, &parent(&end.path)),
    ];
    (pre, post)
}

/// Makes op `kind` act on inode `new` where it acted on `f`.
fn retarget(kind: &mut OpKind, f: Ino, new: Ino) {
    let swap = |i: &mut Ino| {
        if *i == f {
            *i = new;
        }
    };
    if let Some(ino) = kind.inode_mut() {
        swap(ino);
    }
    if let OpKind::Rename {
        replaced: Some(r), ..
    } = kind
    {
        swap(r);
    }
    // The directory under test is never a file updated in place.
    debug_assert!(f != ROOT_INO);
}

/// `path` with its last component `name`.
fn sibling(path: &Name, name: &Name) -> Name {
    let mut p = parent(path).0;
    if !p.is_empty() && !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(&name.0);
    Name(p)
}

/// `path` without its last component (`.` for a bare name).
fn parent(path: &Name) -> Name {
    match path.0.iter().rposition(|&b| b == b'/') {
        Some(0) => Name(b"/".to_vec()),
        Some(i) => Name(path.0[..i].to_vec()),
        None => Name(b".".to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(log: &str) -> Trace {
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    /// `c` (hex 63) opened with O_TRUNC and written twice, then "ok".
    const REWRITE: &str = "1 openat(AT_FDCWD, \"\\x63\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3\n\
                           1 write(3, \"\\x61\", 1) = 1\n\
                           1 write(3, \"\\x62\", 1) = 1\n\
                           1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n";

    #[test]
    fn an_update_in_place_runs_from_its_first_data_op_to_its_last_before_the_promise() {
        let t = trace(REWRITE);
        let outputs = Outputs::new(&t, None);
        // create, write, write, the promise.
        assert_eq!(t.ops.len(), 4, "{:?}", t.ops);
        assert!(
            propose(&t, &outputs, 0).is_none(),
            "a create is not a data op"
        );
        for op in [1, 2] {
            let r = propose(&t, &outputs, op).unwrap();
            assert_eq!((r.first, r.last), (1, 2));
            assert_eq!((r.dir, r.name.clone()), (ROOT_INO, Name::from("c")));
        }
        assert!(propose(&t, &outputs, 3).is_none());
    }

    #[test]
    fn the_replacement_writes_a_new_inode_renamed_over_the_file_then_syncs_the_directory() {
        let t = trace(REWRITE);
        let outputs = Outputs::new(&t, None);
        let r = propose(&t, &outputs, 2).unwrap();
        let (fixed, added) = with_fixes(&t, &[], std::slice::from_ref(&r));
        let new = u32::try_from(t.inodes.len()).unwrap();
        // No data op left on the old inode from the update on; the file's
        // name goes to the new inode, and the directory is fsynced after.
        for op in &fixed.ops[added[0]..] {
            assert_ne!(op.kind.data_inode(), Some(r.ino), "{op:?}");
        }
        let rename = fixed
            .ops
            .iter()
            .position(|o| matches!(o.kind, OpKind::Rename { ino, replaced, .. } if ino == new && replaced == Some(r.ino)))
            .unwrap();
        assert!(
            matches!(fixed.ops[rename - 1].kind, OpKind::Fsync { ino, barrier, .. } if ino == new && barrier == rename - 1)
        );
        assert!(
            matches!(fixed.ops[rename + 1].kind, OpKind::Fsync { ino: ROOT_INO, barrier, .. } if barrier == rename + 1)
        );
        // The promise comes after all of it.
        assert!(matches!(fixed.ops[rename + 2].kind, OpKind::Output { .. }));
        assert_eq!(added.len(), 4, "create, fsync, rename, fsync(dir)");
        assert_eq!(fixed.ops.len(), t.ops.len() + 4);
    }

    #[test]
    fn an_append_copies_what_the_file_held_before() {
        // a (hex 61) appended to; the initial tree is empty, so the copy is
        // its earlier writes: the first write, synced, then the append.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
             1 write(3, \"\\x78\", 1) = 1\n\
             1 fsync(3) = 0\n\
             1 write(3, \"\\x79\", 1) = 1\n",
        );
        let outputs = Outputs::new(&t, None);
        let append = t.ops.len() - 1;
        let r = propose(&t, &outputs, append).unwrap();
        assert_eq!((r.first, r.last), (append, append));
        let (fixed, added) = with_fixes(&t, &[], std::slice::from_ref(&r));
        // create, the copy of the first write, fsync, rename, fsync(dir).
        assert_eq!(added.len(), 5);
        let new = u32::try_from(t.inodes.len()).unwrap();
        let writes: Vec<u64> = fixed
            .ops
            .iter()
            .filter_map(|o| match o.kind {
                OpKind::Write { ino, off, .. } if ino == new => Some(off),
                _ => None,
            })
            .collect();
        assert_eq!(writes, vec![0, 1]);
    }

    #[test]
    fn syncs_added_with_a_replacement_keep_their_places_and_the_added_ops_are_listed() {
        let t = trace(REWRITE);
        let outputs = Outputs::new(&t, None);
        let r = propose(&t, &outputs, 1).unwrap();
        let sync = SyncFix {
            after: 0,
            before: None,
            ino: ROOT_INO,
            dir: true,
            path: ".".into(),
        };
        let (fixed, added) = with_fixes(&t, std::slice::from_ref(&sync), std::slice::from_ref(&r));
        assert_eq!(fixed.ops.len(), t.ops.len() + 5);
        assert_eq!(added.len(), 5);
        for &a in &added {
            assert!(
                fixed.ops[a].syscall.ends_with("(added)"),
                "{:?}",
                fixed.ops[a]
            );
        }
        let recorded: Vec<&str> = (0..fixed.ops.len())
            .filter(|i| added.binary_search(i).is_err())
            .map(|i| fixed.ops[i].syscall.as_str())
            .collect();
        let before: Vec<&str> = t.ops.iter().map(|o| o.syscall.as_str()).collect();
        assert_eq!(recorded, before);
    }
}
