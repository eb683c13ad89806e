//! A run: from a trace and a checker to a verdict.
//!
//! 1. Promises: nothing promised is INCONCLUSIVE (unless the checker tests
//!    consistency alone).
//! 2. Pre-check: the checker must reject the state before the workload wrote
//!    anything, with every promise handed to it; if it accepts, the check
//!    cannot fail (INCONCLUSIVE).
//! 3. All applied: the checker must accept the state where nothing was lost;
//!    if it rejects it, the harness is broken.
//! 4. Explore each model, build every state and deduplicate by content (the
//!    visible tree plus what was printed before the crash).
//! 5. Check each distinct state once, in parallel, and per model report the
//!    failing states simplest first.
//!
//! A checker that cannot be run (the shell says 126/127) stops the run at
//! the first state with ERROR; a checker that times out makes that state an
//! error state, listed as such.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::check::{remove_tree, run_checker, Checker, Outcome, Outputs, Slot, StateInput};
use crate::explain::{self, Cause, SyncFix};
use crate::explore::{enumerate, Coverage, ExploreConfig, Model, StateDesc, Tear, Unit};
use crate::state::FsState;
use crate::trace::Trace;

/// How to run.
pub struct RunConfig {
    /// The models to explore, in order.
    pub models: Vec<Model>,
    /// The checker.
    pub checker: Checker,
    /// Checkers run at once.
    pub jobs: usize,
    /// Enumeration settings (the model field is set per model).
    pub explore: ExploreConfig,
    /// Sector size for torn writes.
    pub sector: u64,
    /// Only lines starting with this are promises.
    pub ack_prefix: Option<Vec<u8>>,
    /// The checker tests consistency alone: no promise is needed and the
    /// pre-check is skipped.
    pub consistency_only: bool,
    /// Where to make the scratch directory (default:
    /// [`default_scratch_parent`]).
    pub scratch_parent: Option<PathBuf>,
    /// Set from outside (Ctrl-C) to stop: running checkers are killed, the
    /// scratch directory removed, and the run returns
    /// [`RunError::Interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called after each checked state with (checked, total).
    pub progress: Option<Box<dyn Fn(usize, usize) + Send + Sync>>,
    /// Distinct fixes verified per model.
    pub fix_verifications: usize,
}

impl RunConfig {
    /// A config with defaults: posix, one job per CPU, 60 s timeout.
    pub fn new(checker: String) -> RunConfig {
        RunConfig {
            models: vec![Model::Posix],
            checker: Checker {
                command: checker,
                timeout: Duration::from_secs(60),
            },
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            explore: ExploreConfig::default(),
            sector: crate::state::SECTOR_BYTES_DEFAULT,
            ack_prefix: None,
            consistency_only: false,
            scratch_parent: None,
            cancel: None,
            progress: None,
            fix_verifications: FIX_VERIFICATIONS_MAX,
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::SeqCst))
    }
}

/// Why a run could not finish (the checker's own failures are verdicts, not
/// errors).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cancel flag was set.
    #[error("interrupted")]
    Interrupted,
    /// Writing states or running the checker failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The verdict of a run or of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Every checked state was accepted.
    Pass,
    /// A state violates the checker.
    Fail,
    /// Nothing was promised, or the check cannot fail.
    Inconclusive,
    /// The checker rejects the state where nothing was lost.
    HarnessBroken,
    /// The checker could not be run, or states could not be checked.
    Error,
}

impl Verdict {
    /// The verdict as printed: `PASS`, `HARNESS BROKEN`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::HarnessBroken => "HARNESS BROKEN",
            Verdict::Error => "ERROR",
        }
    }

    /// The exit code: 0 pass, 1 fail, 2 otherwise.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            _ => 2,
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One checked state, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    /// The state's id.
    pub id: String,
    /// Ops issued before the crash.
    pub crash: usize,
    /// Pending ops (or rename halves) lost.
    pub lost: Vec<Unit>,
    /// The write torn, and how.
    pub torn: Option<(usize, Tear)>,
    /// The promises made before the crash.
    pub acked: Vec<String>,
    /// What the checker said.
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl Checked {
    /// The state's description.
    pub fn desc(&self) -> StateDesc {
        StateDesc {
            crash: self.crash,
            lost: self.lost.clone(),
            torn: self.torn,
        }
    }
}

/// Failing states with one cause: the same kind, the same blamed op.
#[derive(Debug, Clone, Serialize)]
pub struct CauseGroup {
    /// The cause, as explained for the simplest state.
    pub cause: Cause,
    /// How many failing states have it.
    pub states: usize,
    /// Their ids, simplest first.
    pub ids: Vec<String>,
    /// The simplest of them.
    pub simplest: Checked,
    /// The latest promise made before its crash point.
    pub latest_promise: Option<String>,
    /// Whether the same crash point with nothing lost passes: every op
    /// reached the file system and no further, so what is missing is a sync,
    /// not a write. `None` when not known.
    pub process_passes: Option<bool>,
    /// The source line (`file:line`) that issued the blamed ops, when
    /// recorded with `--stacks`: the group then holds every op it issued.
    pub source: Option<String>,
    /// The syncs that should fix the group's states (one per blamed op).
    pub fixes: Vec<SyncFix>,
    /// The fix verified, if a sync can fix it.
    pub fix: Option<FixCheck>,
}

/// The result of re-exploring with added syncs.
#[derive(Debug, Clone, Serialize)]
pub struct FixCheck {
    /// The syncs added (one, or one per op a source line issued).
    pub syncs: Vec<SyncFix>,
    /// Where they sit in the re-explored trace (state ids of
    /// `simplest_failing` count them).
    pub added_at: Vec<usize>,
    /// `fsync(.) after op 3 (log line 224)`.
    pub description: String,
    /// Whether every state passes with it.
    pub passes: bool,
    /// Distinct states of the re-exploration.
    pub states: usize,
    /// How many of them still fail.
    pub still_failing: usize,
    /// The simplest still failing (its id with the added sync) and its cause.
    pub simplest_failing: Option<(String, String)>,
}

/// What one model found.
#[derive(Debug, Clone, Serialize)]
pub struct ModelReport {
    /// The model.
    pub model: Model,
    /// Its verdict.
    pub verdict: Verdict,
    /// States enumerated.
    pub states: usize,
    /// Distinct by content (the states checked).
    pub distinct: usize,
    /// Rejected states, simplest first (each distinct state once, under its
    /// simplest id in this model).
    pub failing: Vec<Checked>,
    /// States whose check did not finish (timeouts), simplest first.
    pub errors: Vec<Checked>,
    /// What the enumeration did not cover.
    pub coverage: Coverage,
    /// The distinct causes of the failing states, in the order of their
    /// simplest states.
    pub causes: Vec<CauseGroup>,
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The overall verdict.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
    /// Every promise the workload made.
    pub promises: Vec<String>,
    /// The checker on the pre-workload state (must reject it).
    pub precheck: Option<Checked>,
    /// The checker on the state with every op applied (must accept it).
    pub all_applied: Option<Checked>,
    /// Per model.
    pub models: Vec<ModelReport>,
    /// Distinct states checked over all models.
    pub checked: usize,
    /// Seconds spent enumerating, building and hashing states.
    pub explore_seconds: f64,
    /// Seconds spent writing states out and running the checker.
    pub check_seconds: f64,
}

impl RunReport {
    /// A report of a run that stopped before exploring.
    fn early(
        (verdict, reason): (Verdict, String),
        promises: Vec<String>,
        precheck: Option<Checked>,
        all_applied: Option<Checked>,
    ) -> RunReport {
        RunReport {
            verdict,
            reason,
            promises,
            precheck,
            all_applied,
            models: Vec::new(),
            checked: 0,
            explore_seconds: 0.0,
            check_seconds: 0.0,
        }
    }
}

/// Orders states simplest first: fewest lost or torn, then the earliest
/// crash, then a lost op before a torn one, then by id.
pub fn simplicity(d: &StateDesc) -> (usize, usize, bool, &StateDesc) {
    (d.damage(), d.crash, d.torn.is_some(), d)
}

fn simpler(a: &StateDesc, b: &StateDesc) -> bool {
    simplicity(a) < simplicity(b)
}

/// One distinct state: the simplest description that reaches it.
#[derive(Debug, Clone)]
pub struct Distinct {
    /// The simplest description over all models.
    pub desc: StateDesc,
    /// The content key: hash of the visible tree, bytes printed before.
    pub key: StateKey,
}

/// What makes two states the same for a checker: the hash of the visible
/// tree and how many bytes were printed before the crash.
pub type StateKey = ([u8; 32], usize);

/// The states of one model.
#[derive(Debug, Clone)]
pub struct ModelStates {
    /// The model.
    pub model: Model,
    /// States enumerated.
    pub states: usize,
    /// For each distinct state this model reaches: its index in
    /// [`Explored::distinct`] and the simplest description in this model.
    pub reach: Vec<(usize, StateDesc)>,
    /// What was not covered.
    pub coverage: Coverage,
}

/// Every distinct state of a trace under some models.
#[derive(Debug, Clone)]
pub struct Explored {
    /// Distinct states, in order of first appearance.
    pub distinct: Vec<Distinct>,
    /// Per model.
    pub models: Vec<ModelStates>,
}

/// The content key of a built state at crash point `crash`.
fn state_key(fs: &FsState, outputs: &Outputs, crash: usize) -> StateKey {
    (*fs.content_hash().as_bytes(), outputs.printed_len(crash))
}

/// Enumerates the states of each model, builds each, and deduplicates them by
/// content: the visible tree plus the bytes printed before the crash.
pub fn explore(
    trace: &Trace,
    outputs: &Outputs,
    models: &[Model],
    cfg: &ExploreConfig,
    sector: u64,
) -> Explored {
    let mut index: HashMap<StateKey, usize> = HashMap::new();
    let mut distinct: Vec<Distinct> = Vec::new();
    let mut per_model = Vec::new();
    for &model in models {
        let mut reach: HashMap<usize, StateDesc> = HashMap::new();
        let mut order: Vec<usize> = Vec::new();
        let mut states = 0usize;
        let coverage = enumerate(
            &trace.ops,
            &ExploreConfig {
                model,
                ..cfg.clone()
            },
            |desc| {
                states += 1;
                let key = state_key(&FsState::build(trace, &desc, sector), outputs, desc.crash);
                let next = distinct.len();
                let i = *index.entry(key).or_insert(next);
                if i == next {
                    distinct.push(Distinct {
                        desc: desc.clone(),
                        key,
                    });
                } else if simpler(&desc, &distinct[i].desc) {
                    distinct[i].desc = desc.clone();
                }
                match reach.get_mut(&i) {
                    Some(d) => {
                        if simpler(&desc, d) {
                            *d = desc;
                        }
                    }
                    None => {
                        order.push(i);
                        reach.insert(i, desc);
                    }
                }
            },
        );
        let reach = order
            .into_iter()
            .map(|i| {
                let d = reach.remove(&i).unwrap_or_else(|| distinct[i].desc.clone());
                (i, d)
            })
            .collect();
        per_model.push(ModelStates {
            model,
            states,
            reach,
            coverage,
        });
    }
    Explored {
        distinct,
        models: per_model,
    }
}

/// The shared state of one run's checking.
struct Scratch<'a> {
    trace: &'a Trace,
    outputs: &'a Outputs,
    cfg: &'a RunConfig,
    dir: &'a Path,
    /// Numbers the workers' slots over the whole run.
    slots: &'a AtomicUsize,
}

impl<'a> Scratch<'a> {
    /// A new slot for a worker (removed when dropped).
    fn slot(&self) -> io::Result<Slot> {
        let n = self.slots.fetch_add(1, Ordering::SeqCst);
        Slot::new(&self.dir.join(format!("w{n}")))
    }

    /// The same scratch, for another trace (one with an added sync).
    fn for_trace(&self, trace: &'a Trace, outputs: &'a Outputs) -> Scratch<'a> {
        Scratch {
            trace,
            outputs,
            cfg: self.cfg,
            dir: self.dir,
            slots: self.slots,
        }
    }

    /// The content key of a state of this scratch's trace.
    fn key(&self, desc: &StateDesc) -> StateKey {
        let fs = FsState::build(self.trace, desc, self.cfg.sector);
        state_key(&fs, self.outputs, desc.crash)
    }

    /// Writes a state into a worker's slot, runs the checker on it, removes
    /// it. `None` when cancelled.
    fn check(
        &self,
        slot: &Slot,
        id: &str,
        fs: &FsState,
        crash: usize,
        all_promises: bool,
    ) -> io::Result<Option<Outcome>> {
        let acked = if all_promises {
            crate::check::join_lines(&self.outputs.all_acked())
        } else {
            self.outputs.acked_text(crash)
        };
        let output = if all_promises {
            self.outputs.output_at(usize::MAX)
        } else {
            self.outputs.output_at(crash)
        };
        slot.write(&StateInput {
            fs,
            acked: &acked,
            output,
        })?;
        let outcome = run_checker(
            &self.cfg.checker,
            slot,
            id,
            &acked,
            self.cfg.cancel.as_deref(),
        );
        let cleared = slot.clear();
        let outcome = outcome?;
        cleared?;
        Ok(outcome)
    }

    fn checked(&self, desc: &StateDesc, outcome: Outcome) -> Checked {
        Checked {
            id: desc.id(),
            crash: desc.crash,
            lost: desc.lost.clone(),
            torn: desc.torn,
            acked: self.acked(desc.crash),
            outcome,
        }
    }

    fn acked(&self, crash: usize) -> Vec<String> {
        self.outputs
            .acked_at(crash)
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    }
}

/// Where crash states are written for checking when not told: `$TMPDIR` if
/// set, else `/dev/shm` (memory: writing and removing thousands of small
/// states there costs a fraction of what it costs on a journaled disk file
/// system), else the system temp dir.
pub fn default_scratch_parent() -> PathBuf {
    if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
        return std::env::temp_dir();
    }
    let shm = Path::new("/dev/shm");
    let writable = rustix::fs::access(
        shm,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok();
    if shm.is_dir() && writable {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Checks a trace: the whole pipeline after recording.
pub fn check_trace(trace: &Trace, cfg: &RunConfig) -> Result<RunReport, RunError> {
    let outputs = Outputs::new(trace, cfg.ack_prefix.as_deref());
    let promises: Vec<String> = outputs
        .all_acked()
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    if promises.is_empty() && !cfg.consistency_only {
        let reason = match &cfg.ack_prefix {
            Some(p) => format!(
                "nothing was promised: no line the workload printed starts with `{}` (or pass --consistency-only if the checker tests consistency alone)",
                String::from_utf8_lossy(p)
            ),
            None => "nothing was promised: the workload printed no line to standard output (or pass --consistency-only if the checker tests consistency alone)".into(),
        };
        return Ok(RunReport::early(
            (Verdict::Inconclusive, reason),
            promises,
            None,
            None,
        ));
    }
    let parent = cfg
        .scratch_parent
        .clone()
        .unwrap_or_else(default_scratch_parent);
    let tmp = tempfile::Builder::new()
        .prefix("blackout-")
        .tempdir_in(parent)?;
    let slots = AtomicUsize::new(0);
    let scratch = Scratch {
        trace,
        outputs: &outputs,
        cfg,
        dir: tmp.path(),
        slots: &slots,
    };
    let result = run_in(&scratch, promises);
    // The checker may have left read-only directories; remove_tree copes.
    let dir = tmp.keep();
    let removed = remove_tree(&dir);
    let report = result?;
    removed?;
    Ok(report)
}

fn run_in(s: &Scratch<'_>, promises: Vec<String>) -> Result<RunReport, RunError> {
    let (trace, cfg) = (s.trace, s.cfg);
    let cancelled = |o: Option<Outcome>| o.ok_or(RunError::Interrupted);
    // The pre-checks use a slot of their own, before the workers start.
    let slot0 = s.slot()?;
    let timeout_s = cfg.checker.timeout.as_secs_f64();

    // The pre-check: the state before the workload, every promise handed.
    let mut precheck = None;
    if !cfg.consistency_only {
        let pre = StateDesc {
            crash: 0,
            lost: Vec::new(),
            torn: None,
        };
        let outcome =
            cancelled(s.check(&slot0, "pre-workload", &FsState::initial(trace), 0, true)?)?;
        let mut c = s.checked(&pre, outcome.clone());
        c.id = "pre-workload".into();
        c.acked = promises.clone();
        precheck = Some(c);
        let bad = expected(
            &outcome,
            false,
            "the state before the workload",
            timeout_s,
            (
                Verdict::Inconclusive,
                format!(
                    "the check cannot fail: the checker accepts the state before the workload ran, with all {} promise(s) handed to it",
                    promises.len()
                ),
            ),
        );
        if let Some(stop) = bad {
            return Ok(RunReport::early(stop, promises, precheck, None));
        }
    }

    // Nothing lost: every op applied, every promise made.
    let full = StateDesc {
        crash: trace.ops.len(),
        lost: Vec::new(),
        torn: None,
    };
    let full_fs = FsState::build(trace, &full, cfg.sector);
    let full_key = state_key(&full_fs, s.outputs, full.crash);
    let outcome = cancelled(s.check(&slot0, &full.id(), &full_fs, full.crash, false)?)?;
    let all_applied = Some(s.checked(&full, outcome.clone()));
    let bad = expected(
        &outcome,
        true,
        "the state where nothing was lost",
        timeout_s,
        (
            Verdict::HarnessBroken,
            format!(
                "the checker rejects the state where nothing was lost (every op applied): {}; the checker, not the program, is wrong",
                outcome.describe()
            ),
        ),
    );
    if let Some(stop) = bad {
        return Ok(RunReport::early(stop, promises, precheck, all_applied));
    }

    drop(slot0);
    let mut cache: Cache = HashMap::from([(full_key, outcome.clone())]);
    let t0 = Instant::now();
    let explored = explore(trace, s.outputs, &cfg.models, &cfg.explore, cfg.sector);
    let explore_seconds = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let results = match check_distinct(s, &explored, &mut cache)? {
        Ok(r) => r,
        Err((id, reason)) => {
            let stop = (
                Verdict::Error,
                format!("the checker could not be run on state {id}: {reason}"),
            );
            return Ok(RunReport::early(stop, promises, precheck, all_applied));
        }
    };
    let check_seconds = t1.elapsed().as_secs_f64();
    let mut models = Vec::new();
    for m in &explored.models {
        models.push(model_report(s, m, &results, &mut cache)?);
    }
    let verdict = if models.iter().any(|m| m.verdict == Verdict::Fail) {
        Verdict::Fail
    } else if models.iter().any(|m| m.verdict == Verdict::Error) {
        Verdict::Error
    } else {
        Verdict::Pass
    };
    let names = |v: Verdict| {
        models
            .iter()
            .filter(|m| m.verdict == v)
            .map(|m| m.model.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reason = match verdict {
        Verdict::Fail => format!(
            "a crash state violates the checker under {}",
            names(Verdict::Fail)
        ),
        Verdict::Error => format!(
            "some states could not be checked (the checker timed out) under {}",
            names(Verdict::Error)
        ),
        _ => "every crash state was accepted".into(),
    };
    Ok(RunReport {
        verdict,
        reason,
        promises,
        precheck,
        all_applied,
        models,
        checked: explored.distinct.len(),
        explore_seconds,
        check_seconds,
    })
}

/// Outcomes by content key, shared by a run and its fix verifications.
type Cache = HashMap<StateKey, Outcome>;

/// Checks every distinct state of an exploration that the cache does not
/// know, adding the results to it. Returns each distinct state's outcome, or
/// the state where the checker could not be run and why.
fn check_distinct(
    s: &Scratch<'_>,
    explored: &Explored,
    cache: &mut Cache,
) -> Result<Result<Vec<Outcome>, (String, String)>, RunError> {
    let todo: Vec<usize> = (0..explored.distinct.len())
        .filter(|&i| !cache.contains_key(&explored.distinct[i].key))
        .collect();
    let (checked, stop) = check_parallel(s, &explored.distinct, &todo)?;
    if let Some(stop) = stop {
        return Ok(Err(stop));
    }
    for (i, o) in checked {
        cache.insert(explored.distinct[i].key, o);
    }
    Ok(Ok(explored
        .distinct
        .iter()
        .map(|d| cache.get(&d.key).cloned().unwrap_or(Outcome::Pass))
        .collect()))
}

/// Failing states and states that could not be checked, simplest first.
fn sorted_results(
    s: &Scratch<'_>,
    m: &ModelStates,
    results: &[Outcome],
) -> (Vec<Checked>, Vec<Checked>) {
    let mut failing = Vec::new();
    let mut errors = Vec::new();
    for (i, desc) in &m.reach {
        match &results[*i] {
            o @ Outcome::Fail { .. } => failing.push(s.checked(desc, o.clone())),
            o @ Outcome::TimedOut { .. } => errors.push(s.checked(desc, o.clone())),
            _ => {}
        }
    }
    let order = |a: &Checked, b: &Checked| simplicity(&a.desc()).cmp(&simplicity(&b.desc()));
    failing.sort_by(order);
    errors.sort_by(order);
    (failing, errors)
}

/// Distinct fixes verified per model at the most (each re-explores the
/// trace; causes that share a fix share its verification).
pub const FIX_VERIFICATIONS_MAX: usize = 16;

/// One model's result: its verdict, failing states, and their causes grouped,
/// each with its fix verified.
fn model_report(
    s: &Scratch<'_>,
    m: &ModelStates,
    results: &[Outcome],
    cache: &mut Cache,
) -> Result<ModelReport, RunError> {
    let (failing, errors) = sorted_results(s, m, results);
    let verdict = if !failing.is_empty() {
        Verdict::Fail
    } else if !errors.is_empty() {
        Verdict::Error
    } else {
        Verdict::Pass
    };
    let cx = explain::Context::new(s.trace, s.outputs);
    let mut groups: Vec<CauseGroup> = Vec::new();
    for c in &failing {
        let desc = c.desc();
        let cause = explain::explain(&cx, &desc, &mut |d| {
            cache.get(&s.key(d)).is_some_and(Outcome::is_fail)
        });
        // One cause per kind and place: the source line that issued the
        // blamed op when it is known (--stacks), else the op itself.
        let source = s.trace.ops[cause.blamed.op]
            .origin
            .as_ref()
            .and_then(|o| Some(format!("{}:{}", o.file.as_deref()?, o.line?)));
        let same = |g: &CauseGroup| {
            g.cause.kind == cause.kind
                && match (&source, &g.source) {
                    (Some(a), Some(b)) => a == b,
                    (None, None) => g.cause.blamed == cause.blamed,
                    _ => false,
                }
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => {
                g.states += 1;
                g.ids.push(c.id.clone());
                // A source line's fix covers every op it issued; otherwise
                // the simplest state's fix is the one verified.
                if let (Some(f), Some(_)) = (&cause.fix, &g.source) {
                    if !g.fixes.contains(f) {
                        g.fixes.push(f.clone());
                    }
                }
            }
            None => {
                let nothing_lost = StateDesc {
                    crash: c.crash,
                    lost: Vec::new(),
                    torn: None,
                };
                let process_passes = if desc.damage() == 0 {
                    Some(false)
                } else {
                    cache
                        .get(&s.key(&nothing_lost))
                        .map(|o| *o == Outcome::Pass)
                };
                groups.push(CauseGroup {
                    latest_promise: s
                        .outputs
                        .latest_promise_before(c.crash)
                        .map(|(_, l)| String::from_utf8_lossy(l).into_owned()),
                    fixes: cause.fix.iter().cloned().collect(),
                    cause,
                    source,
                    states: 1,
                    ids: vec![c.id.clone()],
                    simplest: c.clone(),
                    process_passes,
                    fix: None,
                });
            }
        }
    }
    // Verify each distinct fix once, in the order of the causes. A cause
    // found at one source line is fixed at every op that line issued.
    let mut verified: Vec<(Vec<SyncFix>, Option<FixCheck>)> = Vec::new();
    for g in groups.iter_mut() {
        if g.fixes.is_empty() {
            continue;
        }
        let mut fixes = g.fixes.clone();
        fixes.sort_by_key(|f| (f.after, f.ino));
        if let Some((_, done)) = verified.iter().find(|(f, _)| *f == fixes) {
            g.fix = done.clone();
        } else if verified.len() < s.cfg.fix_verifications {
            g.fix = verify_fix(s, m.model, &fixes, g.source.as_deref(), cache)?;
            verified.push((fixes, g.fix.clone()));
        }
    }
    merge_torn_into_lost(&mut groups);
    Ok(ModelReport {
        model: m.model,
        verdict,
        states: m.states,
        distinct: m.reach.len(),
        failing,
        errors,
        coverage: m.coverage.clone(),
        causes: groups,
    })
}

/// A torn write whose loss is also a cause, where the same verified sync
/// fixes both, is one cause: the missing sync. Its states join that group.
fn merge_torn_into_lost(groups: &mut Vec<CauseGroup>) {
    let mut i = 0;
    while i < groups.len() {
        let g = &groups[i];
        let same = (g.cause.kind == explain::CauseKind::TornWriteAccepted
            && g.fix.as_ref().is_some_and(|f| f.passes))
        .then(|| {
            groups.iter().position(|h| {
                h.cause.kind != explain::CauseKind::TornWriteAccepted
                    && h.cause.blamed.op == g.cause.blamed.op
                    && h.fix.as_ref().is_some_and(|f| f.passes)
                    && h.fixes == g.fixes
            })
        })
        .flatten();
        match same {
            Some(j) => {
                let g = groups.remove(i);
                let j = if j > i { j - 1 } else { j };
                groups[j].states += g.states;
                groups[j].ids.extend(g.ids);
            }
            None => i += 1,
        }
    }
}

/// Re-explores the trace with the added syncs under `model` and checks
/// every state the cache does not know. `None` if the checker could not be
/// run.
fn verify_fix(
    s: &Scratch<'_>,
    model: Model,
    fixes: &[SyncFix],
    source: Option<&str>,
    cache: &mut Cache,
) -> Result<Option<FixCheck>, RunError> {
    let (trace, added) = explain::with_syncs(s.trace, fixes);
    let outputs = Outputs::new(&trace, s.cfg.ack_prefix.as_deref());
    let s2 = s.for_trace(&trace, &outputs);
    let explored = explore(&trace, &outputs, &[model], &s.cfg.explore, s.cfg.sector);
    let Ok(results) = check_distinct(&s2, &explored, cache)? else {
        return Ok(None);
    };
    let m = &explored.models[0];
    let (failing, _) = sorted_results(&s2, m, &results);
    let cx = explain::Context::with_added_syncs(&trace, &outputs, &added);
    let still = failing.first().map(|c| {
        let cause = explain::explain(&cx, &c.desc(), &mut |d| {
            cache.get(&s2.key(d)).is_some_and(Outcome::is_fail)
        });
        (c.id.clone(), cause.sentence)
    });
    let description = match (fixes, source) {
        ([one], _) => one.describe(s.trace),
        (many, Some(src)) => format!(
            "fsync({}) after each of the {} ops issued at {src}",
            many[0].path,
            many.len()
        ),
        (many, None) => format!(
            "{} fsyncs ({})",
            many.len(),
            many.iter()
                .map(|f| f.describe(s.trace))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok(Some(FixCheck {
        description,
        syncs: fixes.to_vec(),
        added_at: added,
        passes: failing.is_empty(),
        states: m.reach.len(),
        still_failing: failing.len(),
        simplest_failing: still,
    }))
}

/// Judges a check the run depends on: `None` when the checker accepted
/// (`want_pass`) or rejected (otherwise) as it must; else the verdict that
/// stops the run: `wrong` when it answered the other way, ERROR when it could
/// not run or did not finish on `state`.
fn expected(
    outcome: &Outcome,
    want_pass: bool,
    state: &str,
    timeout_s: f64,
    wrong: (Verdict, String),
) -> Option<(Verdict, String)> {
    match outcome {
        Outcome::Pass if want_pass => None,
        Outcome::Fail { .. } if !want_pass => None,
        Outcome::Pass | Outcome::Fail { .. } => Some(wrong),
        Outcome::CannotRun { reason } => Some((
            Verdict::Error,
            format!("the checker could not be run: {reason}"),
        )),
        Outcome::TimedOut { .. } => Some((
            Verdict::Error,
            format!("the checker did not finish within {timeout_s} s on {state}; killed"),
        )),
    }
}

/// Results of checking in parallel, and the state (and reason) where the
/// checker could not be run, if it could not.
type Parallel = (Vec<(usize, Outcome)>, Option<(String, String)>);

fn check_parallel(
    s: &Scratch<'_>,
    distinct: &[Distinct],
    todo: &[usize],
) -> Result<Parallel, RunError> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::with_capacity(todo.len()));
    let cannot_run: Mutex<Option<(String, String)>> = Mutex::new(None);
    let failure: Mutex<Option<RunError>> = Mutex::new(None);
    let jobs = s.cfg.jobs.max(1).min(todo.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (next, done, stop, results, cannot_run, failure) =
                (&next, &done, &stop, &results, &cannot_run, &failure);
            scope.spawn(move || {
                let slot = match s.slot() {
                    Ok(slot) => slot,
                    Err(e) => {
                        stop.store(true, Ordering::SeqCst);
                        failure
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get_or_insert(RunError::Io(e));
                        return;
                    }
                };
                loop {
                    if stop.load(Ordering::SeqCst) || s.cfg.cancelled() {
                        return;
                    }
                    let j = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&i) = todo.get(j) else { return };
                    let desc = &distinct[i].desc;
                    let fs = FsState::build(s.trace, desc, s.cfg.sector);
                    match s.check(&slot, &desc.id(), &fs, desc.crash, false) {
                        Ok(Some(Outcome::CannotRun { reason })) => {
                            stop.store(true, Ordering::SeqCst);
                            let mut c = cannot_run.lock().unwrap_or_else(|e| e.into_inner());
                            c.get_or_insert((desc.id(), reason));
                        }
                        Ok(Some(o)) => {
                            results
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((i, o));
                            let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                            if let Some(p) = &s.cfg.progress {
                                p(n, todo.len());
                            }
                        }
                        Ok(None) => return,
                        Err(e) => {
                            stop.store(true, Ordering::SeqCst);
                            failure
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert(RunError::Io(e));
                        }
                    }
                }
            });
        }
    });
    if s.cfg.cancelled() {
        return Err(RunError::Interrupted);
    }
    if let Some(e) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    Ok((
        results.into_inner().unwrap_or_else(|e| e.into_inner()),
        cannot_run.into_inner().unwrap_or_else(|e| e.into_inner()),
    ))
}

/// Writes one state of a trace into `out` (created; it must not exist or
/// be empty), with its promises in `OUT.acks` and what was printed in
/// `OUT.output` beside it. Returns those two paths.
pub fn write_state(
    trace: &Trace,
    desc: &StateDesc,
    ack_prefix: Option<&[u8]>,
    sector: u64,
    out: &Path,
) -> io::Result<(PathBuf, PathBuf)> {
    let outputs = Outputs::new(trace, ack_prefix);
    match std::fs::create_dir(out) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::read_dir(out)?.next().is_some() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not empty", out.display()),
                ));
            }
        }
        Err(e) => return Err(e),
    }
    FsState::build(trace, desc, sector).write_out(out)?;
    let side = |ext: &str| {
        let mut name = out
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_else(|| "state".into());
        name.push(ext);
        out.with_file_name(name)
    };
    let acks = side(".acks");
    let output = side(".output");
    std::fs::write(&acks, outputs.acked_text(desc.crash))?;
    std::fs::write(&output, outputs.output_at(desc.crash))?;
    Ok((acks, output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::Part;

    use crate::trace::trace_of as trace;

    fn lost(ops: &[usize]) -> Vec<Unit> {
        ops.iter()
            .map(|&op| Unit {
                op,
                part: Part::Whole,
            })
            .collect()
    }

    #[test]
    fn simplest_is_fewest_lost_then_earliest_then_lost_before_torn() {
        let d = |crash, l: &[usize], torn: Option<(usize, Tear)>| StateDesc {
            crash,
            lost: lost(l),
            torn,
        };
        let mut v = [
            d(5, &[1, 2], None),
            d(4, &[], Some((3, Tear::Half))),
            d(6, &[1], None),
            d(4, &[2], None),
        ];
        v.sort_by(|a, b| simplicity(a).cmp(&simplicity(b)));
        let ids: Vec<String> = v.iter().map(StateDesc::id).collect();
        assert_eq!(ids, ["c4.lost2", "c4.torn3h", "c6.lost1", "c5.lost1+2"]);
    }

    #[test]
    fn states_are_deduplicated_by_content_and_printed_bytes() {
        // The same bytes written twice at one offset: losing either write
        // leaves the same file, so those states are one. The output line makes
        // the states after it differ from those before.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 pwrite64(3, \"\\x78\", 1, 0) = 1\n\
             1 pwrite64(3, \"\\x78\", 1, 0) = 1\n\
             1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n",
        );
        let outputs = Outputs::new(&t, None);
        let e = explore(
            &t,
            &outputs,
            &[Model::Posix],
            &ExploreConfig::default(),
            512,
        );
        let m = &e.models[0];
        assert!(m.reach.len() < m.states);
        // Every distinct state is reached under its simplest description:
        // c3 (second write applied) holds what c2 holds, and losing either
        // write at c4 is c4 itself.
        let ids: Vec<String> = m.reach.iter().map(|(_, d)| d.id()).collect();
        for absent in ["c3", "c4.lost1", "c4.lost2"] {
            assert!(!ids.contains(&absent.to_string()), "{ids:?}");
        }
        // c2 and c4 hold the same file, but c4 has printed "ok".
        assert!(ids.contains(&"c2".to_string()) && ids.contains(&"c4".to_string()));
        // A key is unique per distinct state.
        let mut keys: Vec<StateKey> = e.distinct.iter().map(|d| d.key).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), e.distinct.len());
    }

    #[test]
    fn a_written_state_has_its_promises_beside_it() {
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x78\", 1) = 1\n\
             1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s");
        let desc = StateDesc::parse("c3.lost1").unwrap();
        let (acks, output) = write_state(&t, &desc, None, 512, &out).unwrap();
        assert_eq!(std::fs::read(out.join("a")).unwrap(), b"");
        assert_eq!(std::fs::read(acks).unwrap(), b"ok\n");
        assert_eq!(std::fs::read(output).unwrap(), b"ok\n");
        // Not into a directory that holds something.
        assert!(write_state(&t, &desc, None, 512, dir.path()).is_err());
    }
}
