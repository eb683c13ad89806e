//! A fix in words, and a fix found on a sample widened: a cause seen only
//! at the states a sampled run checked gets the same sync after every op
//! like its blamed ones that nothing makes durable in time
//! ([`like_ops_fixes`]); [`describe_fix`] and [`describe_syncs`] say a
//! fix of one sync, of every op of a source line, of every like op, or of
//! many syncs by file.

use blackout_oplog::naming::line_words;
use blackout_oplog::ops::{Ino, Op, OpKind};
use blackout_oplog::promises::Outputs;
use blackout_oplog::trace::Trace;

use crate::explain::{role, SyncFix};

/// Several syncs in few words, by file: `fsync(db) after ops 3, 7 and
/// before op 12, and fsync(.) after op 5 (log lines 140-162)` (`calls
/// 140-162` in a native recording).
pub fn describe_syncs(trace: &Trace, fixes: &[SyncFix]) -> String {
    let mut paths: Vec<&str> = Vec::new();
    for f in fixes {
        if !paths.contains(&f.path.as_str()) {
            paths.push(&f.path);
        }
    }
    let ops = |what: &str, mut ns: Vec<usize>| match ns.len() {
        0 => None,
        1 => Some(format!("{what} op {}", ns[0])),
        _ => {
            ns.sort_unstable();
            ns.dedup();
            let list: Vec<String> = ns.iter().map(usize::to_string).collect();
            Some(format!("{what} ops {}", list.join(", ")))
        }
    };
    let parts: Vec<String> = paths
        .iter()
        .map(|p| {
            let of = || fixes.iter().filter(move |f| f.path == *p);
            let after = ops(
                "after",
                of().filter(|f| f.before.is_none())
                    .map(|f| f.after)
                    .collect(),
            );
            let before = ops("before", of().filter_map(|f| f.before).collect());
            let places: Vec<String> = after.into_iter().chain(before).collect();
            format!("fsync({p}) {}", places.join(" and "))
        })
        .collect();
    let lines = fixes
        .iter()
        .map(|f| trace.ops[f.before.unwrap_or(f.after)].line);
    let (lo, hi) = (lines.clone().min().unwrap_or(0), lines.max().unwrap_or(0));
    let at = line_words(trace.numbering, lo, hi);
    format!("{} fsyncs: {} ({at})", fixes.len(), parts.join(", and "))
}

/// How a fix's syncs were chosen, for its description: after every op a
/// source line issued (`source`), or after every op like the blamed ones
/// (`like` names them: `write calls on kv.log`); else each failing state's
/// own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Said<'a> {
    /// The source line that issued the blamed ops.
    pub source: Option<&'a str>,
    /// The ops like the blamed ones, for people.
    pub like: Option<&'a str>,
}

/// A fix for people: one sync, two, every op of a source line, every op
/// like the blamed ones, or by file.
pub fn describe_fix(trace: &Trace, fixes: &[SyncFix], said: Said<'_>) -> String {
    let one_file = fixes.iter().all(|f| f.ino == fixes[0].ino);
    match (fixes, said.source, said.like) {
        ([one], _, _) => one.describe(trace),
        (many, _, Some(like))
            if many
                .iter()
                .all(|f| f.before.is_some() && f.path == many[0].path) =>
        {
            let before = many.iter().filter_map(|f| f.before);
            let (first, last) = (before.clone().min(), before.max());
            format!(
                "fsync({}) before each of the {} {like} (ops {}-{})",
                many[0].path,
                many.len(),
                first.unwrap_or(0),
                last.unwrap_or(0)
            )
        }
        (many, _, Some(like)) => {
            let first = many.iter().map(|f| f.after).min().unwrap_or(0);
            let last = many.iter().map(|f| f.after).max().unwrap_or(0);
            if one_file {
                format!(
                    "fsync({}) after each of the {} {like} (ops {first}-{last})",
                    many[0].path,
                    many.len()
                )
            } else {
                format!(
                    "{} fsyncs, one after each of the {like} (ops {first}-{last}) of the file or directory it changed",
                    many.len()
                )
            }
        }
        ([a, b], None, None) => format!("{} and {}", a.describe(trace), b.describe(trace)),
        (many, Some(src), None) if one_file => format!(
            "fsync({}) after each of the {} ops issued at {src}",
            many[0].path,
            many.len()
        ),
        (many, _, _) => describe_syncs(trace, many),
    }
}

/// A cause found on a sample of the states (representatives, and as many
/// more as the check budget allowed) was seen only where it was checked;
/// the same sync belongs after every op like its blamed ones that nothing
/// makes durable in time: the same call on the same path (a file's own
/// fsync after each of its writes, its directory's after each of the entry
/// ops there) that no sync covers before the next promise is printed, and
/// a file's fsync before each rename like the one that published it
/// unsynced whose file is not synced before it (each renamed file's own,
/// right before its rename). `fixes` gets them; other syncs that must come
/// before an op stay as found. Returns the ops' name for people (`write
/// calls on kv.log`) when syncs were added.
pub fn like_ops_fixes(
    trace: &Trace,
    outputs: &Outputs,
    fixes: &mut Vec<SyncFix>,
) -> Option<String> {
    let synced = blackout_oplog::ops::synced_by(&trace.ops);
    let promises: Vec<usize> = outputs.each_promise().map(|(op, _)| op).collect();
    // Whether op `j` is durable before the first promise after it (before
    // the end of the trace when none follows).
    let covered = |j: usize| {
        let next = promises
            .get(promises.partition_point(|&p| p <= j))
            .copied()
            .unwrap_or(usize::MAX);
        let s = &synced[j];
        matches!((s.main, s.source), (Some(a), Some(b)) if a.max(b) < next)
    };
    let found = fixes.clone();
    let mut like: Vec<(String, String)> = Vec::new();
    for f in &found {
        if let Some(b) = f.before {
            if let Some(name) = like_renames_fixes(trace, &synced, f, b, fixes) {
                if !like.contains(&name) {
                    like.push(name);
                }
            }
            continue;
        }
        let blamed = &trace.ops[f.after];
        // The file's own fsync, or one of the directory it changed.
        let own = blamed.kind.inode() == Some(f.ino);
        let mut added = false;
        let mut paths: Vec<String> = Vec::new();
        for (j, op) in trace.ops.iter().enumerate() {
            if !alike(trace, op, blamed) || covered(j) {
                continue;
            }
            let (ino, path) = match own {
                true => match op.kind.inode() {
                    Some(ino) => (ino, trace.show_path(&op.path)),
                    None => continue,
                },
                false => (f.ino, f.path.clone()),
            };
            if !fixes.iter().any(|g| (g.after, g.ino) == (j, ino)) {
                let on = trace.show_path(&op.path);
                if !paths.contains(&on) {
                    paths.push(on);
                }
                fixes.push(SyncFix {
                    after: j,
                    before: None,
                    ino,
                    dir: f.dir,
                    path,
                });
                added = true;
            }
        }
        // Named by the file when all are on one, else by their role.
        let on = match paths.as_slice() {
            [] | [_] => trace.show_path(&blamed.path),
            _ => format!("files named like {}", role(&trace.show_path(&blamed.path))),
        };
        let name = (blamed.syscall.clone(), on);
        if added && !like.contains(&name) {
            like.push(name);
        }
    }
    match like.as_slice() {
        [] => None,
        [(call, path)] => Some(format!("{call} calls on {path}")),
        _ => Some("ops like the blamed ones".into()),
    }
}

/// Whether two ops are alike for a fix found at representatives: the same
/// call, of the same kind, on the same path or a file of the same role
/// ([`role`]: each of the logs a program rotates through).
fn alike(trace: &Trace, a: &Op, b: &Op) -> bool {
    a.syscall == b.syscall
        && std::mem::discriminant(&a.kind) == std::mem::discriminant(&b.kind)
        && (a.path == b.path || role(&trace.show_path(&a.path)) == role(&trace.show_path(&b.path)))
}

/// For `f`, a file's fsync right before rename `b` that publishes it: the
/// same fsync of each file renamed by a rename like `b` (the same call on
/// the same path), right before it, added to `fixes`. The renames' name
/// for people when any was added.
fn like_renames_fixes(
    trace: &Trace,
    synced: &[blackout_oplog::ops::SyncedBy],
    f: &SyncFix,
    b: usize,
    fixes: &mut Vec<SyncFix>,
) -> Option<(String, String)> {
    let publisher = &trace.ops[b];
    if !matches!(publisher.kind, OpKind::Rename { ino, .. } if ino == f.ino) {
        return None;
    }
    // Whether file `ino`'s last data op before op `r` is synced before it.
    let data_synced_before = |ino: Ino, r: usize| {
        let last = trace.ops[..r]
            .iter()
            .rposition(|o| o.kind.data_inode() == Some(ino));
        last.is_none_or(|j| synced[j].main.is_some_and(|s| s < r))
    };
    let mut added = false;
    for (r, op) in trace.ops.iter().enumerate().skip(1) {
        let OpKind::Rename { ino, .. } = op.kind else {
            continue;
        };
        if alike(trace, op, publisher)
            && !data_synced_before(ino, r)
            && !fixes.iter().any(|g| g.before == Some(r) && g.ino == ino)
        {
            fixes.push(SyncFix {
                after: r - 1,
                before: Some(r),
                ino,
                dir: f.dir,
                path: f.path.clone(),
            });
            added = true;
        }
    }
    added.then(|| (publisher.syscall.clone(), trace.show_path(&publisher.path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file created and written, never fsynced, then "saved" printed.
    fn trace() -> Trace {
        blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
              1 write(3, \"\\x68\\x69\", 2) = 2\n\
              1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
            b"/d",
        )
        .unwrap()
    }

    /// The fix for the lost write: fsync(a) after it.
    fn fsync_a() -> Vec<SyncFix> {
        vec![SyncFix {
            after: 1,
            before: None,
            ino: 1,
            dir: false,
            path: "a".into(),
        }]
    }

    #[test]
    fn several_syncs_are_placed_by_log_lines_or_by_calls() {
        let mut t = trace();
        let mut fixes = fsync_a();
        fixes.push(SyncFix {
            after: 0,
            before: None,
            ino: 0,
            dir: true,
            path: ".".into(),
        });
        assert_eq!(
            describe_syncs(&t, &fixes),
            "2 fsyncs: fsync(a) after op 1, and fsync(.) after op 0 (log lines 1-2)"
        );
        t.numbering = blackout_oplog::trace::Numbering::Call;
        assert_eq!(
            describe_syncs(&t, &fixes),
            "2 fsyncs: fsync(a) after op 1, and fsync(.) after op 0 (calls 1-2)"
        );
    }

    /// What a checker that never answers by itself did: states it was

    #[test]
    fn a_fix_found_at_representatives_goes_after_every_like_op() {
        // Three appends to `a`, each promised before any fsync.
        let t = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
              1 write(3, \"\\x31\", 1) = 1\n\
              1 write(1, \"\\x31\\x0a\", 2) = 2\n\
              1 write(3, \"\\x32\", 1) = 1\n\
              1 write(1, \"\\x32\\x0a\", 2) = 2\n\
              1 write(3, \"\\x33\", 1) = 1\n\
              1 write(1, \"\\x33\\x0a\", 2) = 2\n",
            b"/d",
        )
        .unwrap();
        let mut fixes = fsync_a();
        let like = like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes);
        assert_eq!(like.as_deref(), Some("write calls on a"));
        let after: Vec<usize> = fixes.iter().map(|f| f.after).collect();
        assert_eq!(after, [1, 3, 5]);
        assert!(fixes
            .iter()
            .all(|f| f.ino == 1 && !f.dir && f.before.is_none()));
        let said = Said {
            source: None,
            like: like.as_deref(),
        };
        assert_eq!(
            describe_fix(&t, &fixes, said),
            "fsync(a) after each of the 3 write calls on a (ops 1-5)"
        );
        // Nothing like it left: nothing added.
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes),
            None
        );
        // A sync that must precede an op stays as found.
        let mut before = vec![SyncFix {
            before: Some(2),
            ..fsync_a()[0].clone()
        }];
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut before),
            None
        );
        assert_eq!(before.len(), 1);
    }

    #[test]
    fn like_ops_a_sync_covers_before_their_promise_get_no_fix() {
        // Three appends to `a`, the first and last fdatasynced before
        // their promise, the second not: the fix found for the second
        // goes after it alone.
        let t = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
              1 write(3, \"\\x31\", 1) = 1\n\
              1 fdatasync(3) = 0\n\
              1 write(1, \"\\x31\\x0a\", 2) = 2\n\
              1 write(3, \"\\x32\", 1) = 1\n\
              1 write(1, \"\\x32\\x0a\", 2) = 2\n\
              1 write(3, \"\\x33\", 1) = 1\n\
              1 fdatasync(3) = 0\n\
              1 write(1, \"\\x33\\x0a\", 2) = 2\n",
            b"/d",
        )
        .unwrap();
        let mut fixes = vec![SyncFix {
            after: 4,
            ..fsync_a()[0].clone()
        }];
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes),
            None
        );
        assert_eq!(fixes.len(), 1);
        // Without the syncs every like write gets one.
        let bare = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n\
              1 write(3, \"\\x31\", 1) = 1\n\
              1 write(1, \"\\x31\\x0a\", 2) = 2\n\
              1 write(3, \"\\x32\", 1) = 1\n\
              1 write(1, \"\\x32\\x0a\", 2) = 2\n",
            b"/d",
        )
        .unwrap();
        let mut fixes = vec![SyncFix {
            after: 3,
            ..fsync_a()[0].clone()
        }];
        let like = like_ops_fixes(&bare, &Outputs::new(&bare, None), &mut fixes);
        assert_eq!(like.as_deref(), Some("write calls on a"));
        let mut after: Vec<usize> = fixes.iter().map(|f| f.after).collect();
        after.sort_unstable();
        assert_eq!(after, [1, 3]);
    }

    #[test]
    fn a_fsync_before_a_publishing_rename_goes_before_every_like_rename() {
        // Three snapshots, each written to `t` and renamed over `s`
        // without an fsync; the cause was found at the second.
        let mut log = String::new();
        for i in 0..3 {
            log.push_str(&format!(
                "1 openat(AT_FDCWD, \"\\x74\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3\n\
                 1 write(3, \"\\x3{i}\", 1) = 1\n\
                 1 close(3) = 0\n\
                 1 rename(\"\\x74\", \"\\x73\") = 0\n"
            ));
        }
        let t = blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap();
        let renames: Vec<(usize, Ino)> = t
            .ops
            .iter()
            .enumerate()
            .filter_map(|(j, op)| match op.kind {
                OpKind::Rename { ino, .. } => Some((j, ino)),
                _ => None,
            })
            .collect();
        assert_eq!(renames.len(), 3);
        let (b, ino) = renames[1];
        let mut fixes = vec![SyncFix {
            after: b - 1,
            before: Some(b),
            ino,
            dir: false,
            path: "t".into(),
        }];
        let like = like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes);
        assert_eq!(like.as_deref(), Some("rename calls on t"));
        fixes.sort_by_key(|f| f.after);
        let got: Vec<(Option<usize>, Ino)> = fixes.iter().map(|f| (f.before, f.ino)).collect();
        let want: Vec<(Option<usize>, Ino)> = renames.iter().map(|&(j, i)| (Some(j), i)).collect();
        assert_eq!(got, want);
        let said = Said {
            source: None,
            like: like.as_deref(),
        };
        assert_eq!(
            describe_fix(&t, &fixes, said),
            format!(
                "fsync(t) before each of the 3 rename calls on t (ops {}-{})",
                renames[0].0, renames[2].0
            )
        );
        // All there: nothing added.
        assert_eq!(
            like_ops_fixes(&t, &Outputs::new(&t, None), &mut fixes),
            None
        );
    }
}
