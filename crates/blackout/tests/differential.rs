//! The differential suite: generated storage programs, each run for real
//! under strace and checked in-process with a strict generic checker, by
//! the default's way (representatives first, then the rest of the trace
//! most novel first within the check budget) and exhaustively. The
//! verdicts, the distinct states and the failing ones must be equal, a
//! representatives-only PASS must say it is a sample, and the default's
//! verified fix must make the exhaustive exploration pass. Any mismatch
//! prints the program as a regression case (checked in under
//! `tests/differential/`, where every run replays them first).
//!
//! Each program is recorded with the native recorder too, and its op log
//! must equal strace's (call numbers aside: strace numbers log lines, the
//! native recorder calls), with the same output and exit.
//!
//! The programs are short (a few dozen ops), so the suite forces
//! representatives (`--representatives 3`), which the default takes only
//! above 500 ops: the path compared is the default's.
//!
//! ```text
//! cargo test -p blackout-engine --test differential                # the default share
//! BLACKOUT_DIFFERENTIAL_PROGRAMS=100000 cargo test --release -p blackout-engine --test differential
//! BLACKOUT_DIFFERENTIAL_REPLAY=case.prog cargo test -p blackout-engine --test differential
//! ```
//!
//! The test binary is its own workload: re-executed with
//! `BLACKOUT_DIFFERENTIAL_PROGRAM=FILE`, it runs that program in its
//! working directory (the directory under test) and prints its promises.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blackout::analysis::explain::SyncFix;
use blackout::analysis::replace::{with_fixes, Replace};
use blackout::analysis::report::{FixCheck, FixSet, RunReport, Verdict};
use blackout::check::closure::ClosureChecker;
use blackout::explore::enumerate::Representatives;
use blackout::explore::model::Model;
use blackout::oplog::trace::Trace;
use blackout::record::{NativeRecorder, RecordConfig, Recorder, Recording, StraceRecorder};
use blackout::run::{check_trace, RunConfig};

/// Re-executed as a workload: the program file to run.
const PROGRAM_ENV: &str = "BLACKOUT_DIFFERENTIAL_PROGRAM";
/// How many programs to generate (default [`PROGRAMS_DEFAULT`]).
const PROGRAMS_ENV: &str = "BLACKOUT_DIFFERENTIAL_PROGRAMS";
/// The first program's seed (default 1).
const SEED_ENV: &str = "BLACKOUT_DIFFERENTIAL_SEED";
/// A program file to run alone.
const REPLAY_ENV: &str = "BLACKOUT_DIFFERENTIAL_REPLAY";
/// Programs in the default test run.
const PROGRAMS_DEFAULT: u64 = 300;

/// The paths a program uses: three in the directory under test, two in
/// its subdirectory `d` (made before the workload, durable).
const PATHS: [&str; 5] = ["a", "b", "c", "d/a", "d/b"];
/// The directories it can fsync.
const DIRS: [&str; 2] = [".", "d"];

/// One step of a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Creates an empty file (`open(O_CREAT|O_EXCL)`).
    Create(usize),
    /// `pwrite` of `len` bytes at `off` (within, across and past sectors).
    Write { f: usize, off: u64, len: u64 },
    /// `pwrite` of `len` bytes at the file's end.
    Append { f: usize, len: u64 },
    /// `ftruncate` to `size`.
    Truncate { f: usize, size: u64 },
    /// `rename`, within a directory or between the two.
    Rename { from: usize, to: usize },
    /// `unlink`.
    Unlink(usize),
    /// `fsync` of a file.
    Fsync(usize),
    /// `fdatasync` of a file.
    Fdatasync(usize),
    /// `fsync` of a directory.
    FsyncDir(usize),
    /// `pwrite` through an `O_DSYNC` descriptor.
    Dsync { f: usize, off: u64, len: u64 },
    /// Prints `P PATH V`: the path holds its version V or a later one.
    Promise { f: usize, version: usize },
}

/// A program: its data seed, the initial size of `a` (written before the
/// workload, durable), and its steps.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Program {
    seed: u64,
    init: u64,
    steps: Vec<Step>,
}

/// A tiny deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

/// The bytes step `i` of a program with `seed` writes.
fn data(seed: u64, i: usize, len: u64) -> Vec<u8> {
    let mut r = Rng(seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
    (0..len).map(|_| b'a' + (r.below(26) as u8)).collect()
}

/// What a program does to its files, in memory: each path's versions
/// (`None`: absent), the first the one before the workload.
#[derive(Debug, Clone)]
struct Shadow {
    now: Vec<Option<Vec<u8>>>,
    versions: Vec<Vec<Option<Vec<u8>>>>,
}

impl Shadow {
    fn new(init: u64) -> Shadow {
        let mut now = vec![None; PATHS.len()];
        now[0] = Some(data(0, usize::MAX, init));
        let versions = now.iter().map(|v| vec![v.clone()]).collect();
        Shadow { now, versions }
    }

    fn set(&mut self, f: usize, v: Option<Vec<u8>>) {
        self.now[f] = v.clone();
        self.versions[f].push(v);
    }

    fn file(&self, f: usize) -> Option<&Vec<u8>> {
        self.now[f].as_ref()
    }

    /// Applies step `i` of a program with `seed`.
    fn apply(&mut self, seed: u64, i: usize, step: Step) {
        let write = |old: &Vec<u8>, off: u64, len: u64| {
            let mut new = old.clone();
            let end = (off + len) as usize;
            if new.len() < end {
                new.resize(end, 0);
            }
            new[off as usize..end].copy_from_slice(&data(seed, i, len));
            new
        };
        match step {
            Step::Create(f) => self.set(f, Some(Vec::new())),
            Step::Write { f, off, len } | Step::Dsync { f, off, len } => {
                let new = write(self.file(f).unwrap(), off, len);
                self.set(f, Some(new));
            }
            Step::Append { f, len } => {
                let old = self.file(f).unwrap();
                let new = write(old, old.len() as u64, len);
                self.set(f, Some(new));
            }
            Step::Truncate { f, size } => {
                let mut new = self.file(f).unwrap().clone();
                new.resize(size as usize, 0);
                self.set(f, Some(new));
            }
            Step::Rename { from, to } => {
                let moved = self.now[from].clone();
                self.set(from, None);
                self.set(to, moved);
            }
            Step::Unlink(f) => self.set(f, None),
            Step::Fsync(_) | Step::Fdatasync(_) | Step::FsyncDir(_) | Step::Promise { .. } => {}
        }
    }
}

/// The syncs a careful program makes after `step`: the changed file's
/// fsync, and its directory's after an entry changes.
fn careful_syncs(step: Step) -> Vec<Step> {
    let dir = |f: usize| usize::from(PATHS[f].starts_with("d/"));
    match step {
        Step::Create(f) => vec![Step::Fsync(f), Step::FsyncDir(dir(f))],
        Step::Write { f, .. } | Step::Append { f, .. } | Step::Truncate { f, .. } => {
            vec![Step::Fsync(f)]
        }
        Step::Rename { from, to } => {
            let mut v = vec![Step::FsyncDir(dir(to))];
            if dir(from) != dir(to) {
                v.push(Step::FsyncDir(dir(from)));
            }
            v
        }
        Step::Unlink(f) => vec![Step::FsyncDir(dir(f))],
        _ => Vec::new(),
    }
}

/// A random program of `seed`. One in three is careful: it syncs what each
/// step changed right after it, most of the time (a correct program, or
/// one with a sync or two missing).
fn generate(seed: u64) -> Program {
    let mut r = Rng(seed);
    let careful = r.below(3) == 0;
    let init = r.pick(&[0, 0, 600, 1500]);
    let mut shadow = Shadow::new(init);
    let mut steps = Vec::new();
    let n = 4 + r.below(24) as usize;
    let offs = [0u64, 8, 40, 480, 500, 511, 512, 1000, 1020];
    let lens = [1u64, 8, 40, 100, 512, 700, 1100];
    while steps.len() < n {
        let existing: Vec<usize> = (0..PATHS.len())
            .filter(|&f| shadow.now[f].is_some())
            .collect();
        let absent: Vec<usize> = (0..PATHS.len())
            .filter(|&f| shadow.now[f].is_none())
            .collect();
        let step = match r.below(12) {
            0 if !absent.is_empty() => Step::Create(r.pick(&absent)),
            1 | 2 if !existing.is_empty() => Step::Write {
                f: r.pick(&existing),
                off: r.pick(&offs),
                len: r.pick(&lens),
            },
            3 if !existing.is_empty() => Step::Append {
                f: r.pick(&existing),
                len: r.pick(&lens),
            },
            4 if !existing.is_empty() => Step::Truncate {
                f: r.pick(&existing),
                size: r.pick(&[0, 40, 512, 700]),
            },
            5 if !existing.is_empty() => {
                let from = r.pick(&existing);
                let to = r.pick(&(0..PATHS.len()).filter(|&t| t != from).collect::<Vec<_>>());
                Step::Rename { from, to }
            }
            6 if !existing.is_empty() && r.below(2) == 0 => Step::Unlink(r.pick(&existing)),
            7 if !existing.is_empty() => Step::Fsync(r.pick(&existing)),
            8 if !existing.is_empty() => Step::Fdatasync(r.pick(&existing)),
            9 => Step::FsyncDir(r.below(2) as usize),
            10 if !existing.is_empty() => Step::Dsync {
                f: r.pick(&existing),
                off: r.pick(&offs),
                len: r.pick(&[1, 8, 40]),
            },
            11 if !existing.is_empty() => {
                let f = r.pick(&existing);
                Step::Promise {
                    f,
                    version: shadow.versions[f].len() - 1,
                }
            }
            _ => continue,
        };
        shadow.apply(seed, steps.len(), step);
        steps.push(step);
        if careful && r.below(8) != 0 {
            steps.extend(careful_syncs(step));
        }
    }
    // End on a promise of a file holding something new, so that the check
    // can fail (else the run is INCONCLUSIVE both ways).
    if let Some(f) =
        (0..PATHS.len()).find(|&f| shadow.versions[f].len() > 1 && shadow.now[f].is_some())
    {
        steps.push(Step::Promise {
            f,
            version: shadow.versions[f].len() - 1,
        });
    }
    Program { seed, init, steps }
}

impl Program {
    /// The program as text: a regression case.
    fn text(&self) -> String {
        let p = |f: usize| PATHS[f];
        let mut out = format!("seed {}\ninit {}\n", self.seed, self.init);
        for s in &self.steps {
            let line = match *s {
                Step::Create(f) => format!("create {}", p(f)),
                Step::Write { f, off, len } => format!("write {} {off} {len}", p(f)),
                Step::Append { f, len } => format!("append {} {len}", p(f)),
                Step::Truncate { f, size } => format!("truncate {} {size}", p(f)),
                Step::Rename { from, to } => format!("rename {} {}", p(from), p(to)),
                Step::Unlink(f) => format!("unlink {}", p(f)),
                Step::Fsync(f) => format!("fsync {}", p(f)),
                Step::Fdatasync(f) => format!("fdatasync {}", p(f)),
                Step::FsyncDir(d) => format!("fsyncdir {}", DIRS[d]),
                Step::Dsync { f, off, len } => format!("dsync {} {off} {len}", p(f)),
                Step::Promise { f, version } => format!("promise {} {version}", p(f)),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// A program from its text; `None` for anything else.
    fn parse(text: &str) -> Option<Program> {
        let path = |s: &str| PATHS.iter().position(|p| *p == s);
        let mut prog = Program {
            seed: 0,
            init: 0,
            steps: Vec::new(),
        };
        for line in text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        {
            let w: Vec<&str> = line.split_whitespace().collect();
            let n = |i: usize| w.get(i)?.parse::<u64>().ok();
            let step = match w[0] {
                "seed" => {
                    prog.seed = n(1)?;
                    continue;
                }
                "init" => {
                    prog.init = n(1)?;
                    continue;
                }
                "create" => Step::Create(path(w.get(1)?)?),
                "write" => Step::Write {
                    f: path(w.get(1)?)?,
                    off: n(2)?,
                    len: n(3)?,
                },
                "append" => Step::Append {
                    f: path(w.get(1)?)?,
                    len: n(2)?,
                },
                "truncate" => Step::Truncate {
                    f: path(w.get(1)?)?,
                    size: n(2)?,
                },
                "rename" => Step::Rename {
                    from: path(w.get(1)?)?,
                    to: path(w.get(2)?)?,
                },
                "unlink" => Step::Unlink(path(w.get(1)?)?),
                "fsync" => Step::Fsync(path(w.get(1)?)?),
                "fdatasync" => Step::Fdatasync(path(w.get(1)?)?),
                "fsyncdir" => {
                    let dir = *w.get(1)?;
                    Step::FsyncDir(DIRS.iter().position(|d| *d == dir)?)
                }
                "dsync" => Step::Dsync {
                    f: path(w.get(1)?)?,
                    off: n(2)?,
                    len: n(3)?,
                },
                "promise" => Step::Promise {
                    f: path(w.get(1)?)?,
                    version: n(2)? as usize,
                },
                _ => return None,
            };
            prog.steps.push(step);
        }
        Some(prog)
    }

    /// Each path's versions over the program.
    fn shadow(&self) -> Shadow {
        let mut shadow = Shadow::new(self.init);
        for (i, s) in self.steps.iter().enumerate() {
            shadow.apply(self.seed, i, *s);
        }
        shadow
    }
}

/// Runs a program in the working directory, for real, printing its
/// promises on standard output.
fn run_program(prog: &Program) -> std::io::Result<()> {
    let open = |f: usize| OpenOptions::new().write(true).open(PATHS[f]);
    let mut out = std::io::stdout().lock();
    let mut shadow = Shadow::new(prog.init);
    for (i, step) in prog.steps.iter().enumerate() {
        match *step {
            Step::Create(f) => {
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(PATHS[f])?;
            }
            Step::Write { f, off, len } => open(f)?.write_all_at(&data(prog.seed, i, len), off)?,
            Step::Append { f, len } => {
                let end = shadow.file(f).map_or(0, |v| v.len() as u64);
                open(f)?.write_all_at(&data(prog.seed, i, len), end)?;
            }
            Step::Truncate { f, size } => open(f)?.set_len(size)?,
            Step::Rename { from, to } => std::fs::rename(PATHS[from], PATHS[to])?,
            Step::Unlink(f) => std::fs::remove_file(PATHS[f])?,
            Step::Fsync(f) => open(f)?.sync_all()?,
            Step::Fdatasync(f) => open(f)?.sync_data()?,
            Step::FsyncDir(d) => File::open(DIRS[d])?.sync_all()?,
            Step::Dsync { f, off, len } => OpenOptions::new()
                .write(true)
                .custom_flags(rustix::fs::OFlags::DSYNC.bits() as i32)
                .open(PATHS[f])?
                .write_all_at(&data(prog.seed, i, len), off)?,
            Step::Promise { f, version } => {
                writeln!(out, "P {} {version}", PATHS[f])?;
                out.flush()?;
            }
        }
        shadow.apply(prog.seed, i, *step);
    }
    Ok(())
}

/// The strict generic checker: for every promise `P PATH V`, the state's
/// PATH holds version V of it or a later one, byte for byte (a lost or
/// torn write, a lost rename or create, all fail).
fn checker(prog: &Program) -> ClosureChecker {
    let versions = prog.shadow().versions;
    ClosureChecker::new(
        "the strict generic check",
        move |dir: &Path, promised: &[String]| {
            for p in promised {
                let w: Vec<&str> = p.split_whitespace().collect();
                let (Some(path), Some(v)) =
                    (w.get(1), w.get(2).and_then(|v| v.parse::<usize>().ok()))
                else {
                    return Err(format!("a promise this program does not make: {p:?}"));
                };
                let f = PATHS
                    .iter()
                    .position(|q| q == path)
                    .ok_or("an unknown path")?;
                let held = std::fs::read(dir.join(path)).ok();
                let later = versions[f]
                    .get(v..)
                    .ok_or("a version this program never made")?;
                if !later.contains(&held) {
                    return Err(format!(
                        "{path} holds {} bytes that are not version {v} or a later one",
                        held.map_or("no".into(), |h| h.len().to_string())
                    ));
                }
            }
            Ok(())
        },
    )
}

/// Records a program: this test binary re-executed to run it, under
/// strace and under the native recorder, whose op logs must be equal
/// ([`same_recordings`]); strace's trace.
fn record(prog: &Program, scratch: &Path) -> Result<Trace, String> {
    let file = scratch.join(format!("p{}.prog", prog.seed));
    std::fs::write(&file, prog.text()).map_err(|e| e.to_string())?;
    let init = scratch.join(format!("init{}", prog.seed));
    std::fs::create_dir_all(init.join("d")).map_err(|e| e.to_string())?;
    std::fs::write(init.join("a"), data(0, usize::MAX, prog.init)).map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cfg = RecordConfig::new(vec![exe.into_os_string()]);
    cfg.env = vec![(PROGRAM_ENV.into(), file.clone().into_os_string())];
    cfg.init = Some(init.clone());
    let rec = StraceRecorder::default()
        .record(&cfg)
        .map_err(|e| e.to_string());
    let native = NativeRecorder
        .record(&cfg)
        .map_err(|e| format!("the native recorder: {e}"));
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_dir_all(&init);
    let (rec, native) = (rec?, native?);
    if rec.trace.exit.code != Some(0) {
        return Err(format!(
            "the program failed: {}",
            String::from_utf8_lossy(&rec.stderr)
        ));
    }
    same_recordings(&rec, &native)?;
    Ok(rec.trace)
}

/// The same op log (call numbers aside), output and exit from strace's
/// recording and the native recorder's.
fn same_recordings(strace: &Recording, native: &Recording) -> Result<(), String> {
    let (s, n) = (
        strace.trace.op_log_unnumbered(),
        native.trace.op_log_unnumbered(),
    );
    if s != n {
        return Err(format!(
            "the native recorder's op log differs from strace's\n--- strace:\n{s}--- native:\n{n}"
        ));
    }
    if strace.stdout != native.stdout || strace.trace.exit != native.trace.exit {
        return Err(format!(
            "the native recorder's output or exit differs from strace's: {:?} {:?}, native {:?} {:?}",
            String::from_utf8_lossy(&strace.stdout),
            strace.trace.exit,
            String::from_utf8_lossy(&native.stdout),
            native.trace.exit
        ));
    }
    Ok(())
}

/// Checks a trace under posix in-process, one job, with `representatives`
/// and `budget`, verifying fixes when `fixes`.
fn check(
    trace: &Trace,
    prog: &Program,
    representatives: Representatives,
    budget: Option<Duration>,
    fixes: bool,
) -> Result<RunReport, String> {
    let mut cfg = RunConfig::with_checker(Box::new(checker(prog)));
    cfg.models = vec![Model::Posix];
    cfg.jobs = 1;
    if !fixes {
        cfg.fix_verifications = 0;
    }
    cfg.explore.representatives = representatives;
    cfg.check_budget = budget;
    check_trace(trace, &cfg).map_err(|e| e.to_string())
}

/// The syncs and replacements of the default's verified fix: the fix set
/// found, or a cause's fix that makes every state pass; only fixes
/// verified on every state (exact).
fn verified_fix(report: &RunReport) -> Option<(Vec<SyncFix>, Vec<Replace>)> {
    let m = report.models.first()?;
    let both = |f: &FixCheck| (f.syncs.clone(), f.replaced.clone());
    if let Some(FixSet::Found { check, .. }) = &m.fix_set {
        return (check.passes && check.exact).then(|| both(check));
    }
    m.causes
        .iter()
        .filter_map(|g| g.fix.as_ref())
        .find(|f| f.passes_all() && f.exact)
        .map(both)
}

/// Every count the report gives against its whole, in every format a person
/// reads (text, Markdown): no "N of M" with N more than M; and every
/// cause's windows inside the run's crash points.
fn counts_hold(report: &RunReport, trace: &Trace) -> Result<(), String> {
    use blackout::export::markdown::MarkdownExporter;
    use blackout::export::text::TextExporter;
    use blackout::export::{ExportContext, Exporter};
    let cx = ExportContext {
        trace,
        trace_path: None,
        trace_id: "",
        checker: "",
        checker_flag: "",
        state_flags: "",
        all_causes: true,
        ack_prefix: None,
    };
    let exporters: [&dyn Exporter; 2] = [&TextExporter { color: false }, &MarkdownExporter];
    for e in exporters {
        let text = String::from_utf8_lossy(&e.export(report, &cx)).into_owned();
        let words: Vec<&str> = text.split_whitespace().collect();
        for w in words.windows(3) {
            let num = |s: &str| {
                s.trim_matches(|c: char| !c.is_ascii_digit())
                    .parse::<u64>()
                    .ok()
            };
            let (Some(n), "of", Some(m)) = (num(w[0]), w[1], num(w[2])) else {
                continue;
            };
            if n > m {
                return Err(format!("the report counts {n} of {m}: {}", w.join(" ")));
            }
        }
    }
    let last = trace.ops.len();
    for g in report.models.iter().flat_map(|m| &m.causes) {
        for w in g.windows.iter().chain(std::iter::once(&g.window)) {
            if w.crash_last > last || w.crash_first > w.crash_last {
                return Err(format!("a window outside the run's crash points: {w:?}"));
            }
        }
    }
    Ok(())
}

/// What one program showed when every rule held.
struct Shown {
    /// The exhaustive verdict.
    verdict: Verdict,
    /// Ops recorded.
    ops: usize,
    /// Whether the default's verified fix was checked exhaustively.
    fixed: bool,
    /// Whether representatives alone passed (a sample, as they said) where
    /// every state shows a failure.
    reps_missed: bool,
}

/// What one program showed ([`Shown`]), or why a rule did not hold.
fn compare(prog: &Program, scratch: &Path) -> Result<Shown, String> {
    let trace = record(prog, scratch)?;
    let budget = Some(blackout::run::CHECK_BUDGET_DEFAULT);
    let default = check(&trace, prog, Representatives::PerClass(3), budget, true)?;
    let all = check(&trace, prog, Representatives::Exhaustive, None, false)?;
    let reps = check(
        &trace,
        prog,
        Representatives::PerClass(3),
        Some(Duration::ZERO),
        false,
    )?;
    let ids = |r: &RunReport| -> Vec<String> {
        let mut v: Vec<String> = r
            .models
            .iter()
            .flat_map(|m| m.failing.iter().map(|c| c.id.clone()))
            .collect();
        v.sort();
        v
    };
    if default.verdict != all.verdict {
        return Err(format!(
            "the default says {} ({}), --exhaustive {} ({})",
            default.verdict.name(),
            default.reason,
            all.verdict.name(),
            all.reason
        ));
    }
    if all.verdict == Verdict::Pass || all.verdict == Verdict::Fail {
        if !default.exact {
            return Err(format!(
                "the default's run of a short program is not exact: {}",
                default.reason
            ));
        }
        if default.states_distinct != all.states_distinct || ids(&default) != ids(&all) {
            return Err(format!(
                "the default explored {} distinct states and failed {:?}; --exhaustive {} and {:?}",
                default.states_distinct,
                ids(&default),
                all.states_distinct,
                ids(&all)
            ));
        }
    }
    match reps.verdict {
        Verdict::Pass if reps.exact && all.verdict != Verdict::Pass => {
            return Err(format!(
                "representatives alone claim an exact PASS: {}",
                reps.reason
            ));
        }
        Verdict::Pass if !reps.exact && !reps.reason.contains("a sample") => {
            return Err(format!("a sampled PASS does not say so: {}", reps.reason));
        }
        Verdict::Fail if all.verdict != Verdict::Fail => {
            return Err("representatives alone fail where --exhaustive does not".into());
        }
        _ => {}
    }
    for r in [&default, &all, &reps] {
        counts_hold(r, &trace)?;
    }
    let fix = verified_fix(&default);
    if let Some((syncs, replaced)) = &fix {
        let (fixed, _) = with_fixes(&trace, syncs, replaced);
        let after = check(&fixed, prog, Representatives::Exhaustive, None, false)?;
        if after.verdict != Verdict::Pass {
            let (n, r) = (syncs.len(), replaced.len());
            let (v, why) = (after.verdict.name(), &after.reason);
            return Err(format!("the default's verified fix ({n} syncs, {r} replacements) leaves --exhaustive at {v}: {why}"));
        }
    }
    Ok(Shown {
        verdict: all.verdict,
        ops: trace.ops.len(),
        fixed: fix.is_some(),
        reps_missed: reps.verdict == Verdict::Pass && all.verdict == Verdict::Fail,
    })
}

/// The regression cases checked in beside this file.
fn regressions() -> Vec<(PathBuf, Program)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/differential");
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&dir) {
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "prog"))
        {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            match Program::parse(&text) {
                Some(prog) => out.push((p, prog)),
                None => panic!("{}: not a program", p.display()),
            }
        }
    }
    out
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number")),
        Err(_) => default,
    }
}

/// The programs to compare, each with its name: the one
/// `BLACKOUT_DIFFERENTIAL_REPLAY` names alone, else the regression cases
/// and `BLACKOUT_DIFFERENTIAL_PROGRAMS` generated ones from
/// `BLACKOUT_DIFFERENTIAL_SEED`.
fn programs() -> Vec<(String, Program)> {
    if let Some(file) = std::env::var_os(REPLAY_ENV) {
        let text = std::fs::read_to_string(&file).expect("the program to replay");
        return vec![(
            PathBuf::from(&file).display().to_string(),
            Program::parse(&text).expect("a program"),
        )];
    }
    let mut programs: Vec<(String, Program)> = regressions()
        .into_iter()
        .map(|(p, prog)| (p.display().to_string(), prog))
        .collect();
    let n = env_u64(PROGRAMS_ENV, PROGRAMS_DEFAULT);
    let first = env_u64(SEED_ENV, 1);
    programs.extend((first..first + n).map(|seed| (format!("seed {seed}"), generate(seed))));
    programs
}

fn main() {
    if let Some(file) = std::env::var_os(PROGRAM_ENV) {
        let text = std::fs::read_to_string(&file).expect("the program file");
        let prog = Program::parse(&text).expect("a program");
        if let Err(e) = run_program(&prog) {
            eprintln!("program: {e}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    // `cargo test -- --list` and the like: nothing to list.
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let programs = programs();
    let scratch = tempfile::Builder::new()
        .prefix("blackout-differential-")
        .tempdir()
        .expect("a scratch directory");
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let ops = AtomicUsize::new(0);
    let fixed = AtomicUsize::new(0);
    let missed = AtomicUsize::new(0);
    let mismatches: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let verdicts: Mutex<HashMap<&'static str, usize>> = Mutex::new(HashMap::new());
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(4);
    let programs = Arc::new(programs);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((name, prog)) = programs.get(i) else { return };
                match compare(prog, scratch.path()) {
                    Ok(shown) => {
                        ops.fetch_add(shown.ops, Ordering::SeqCst);
                        fixed.fetch_add(usize::from(shown.fixed), Ordering::SeqCst);
                        missed.fetch_add(usize::from(shown.reps_missed), Ordering::SeqCst);
                        *verdicts.lock().unwrap().entry(shown.verdict.name()).or_insert(0) += 1;
                    }
                    Err(why) => {
                        let case = format!(
                            "mismatch on {name}: {why}\n--- regression case (save as crates/blackout/tests/differential/NAME.prog):\n{}",
                            prog.text()
                        );
                        eprintln!("{case}");
                        mismatches.lock().unwrap().push(case);
                    }
                }
                let done = i + 1;
                if done % 1000 == 0 {
                    eprintln!("{done} programs, {:.0} s", started.elapsed().as_secs_f64());
                }
            });
        }
    });
    let mismatches = mismatches.into_inner().unwrap();
    let mut verdicts: Vec<(&str, usize)> = verdicts.into_inner().unwrap().into_iter().collect();
    verdicts.sort();
    println!(
        "differential: {} programs ({} ops), {} mismatches, {:.1} s; exhaustive verdicts {:?}; {} verified fixes checked exhaustively; representatives alone (--check-budget 0) passed {} that fail, each saying it checked a sample",
        programs.len(),
        ops.load(Ordering::SeqCst),
        mismatches.len(),
        started.elapsed().as_secs_f64(),
        verdicts,
        fixed.load(Ordering::SeqCst),
        missed.load(Ordering::SeqCst)
    );
    if !mismatches.is_empty() {
        std::process::exit(1);
    }
}
