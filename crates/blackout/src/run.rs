//! A run: from a trace and a checker to a verdict. [`RunConfig`] holds its
//! settings, [`check_trace`] drives analysis's steps
//! ([`blackout_analysis::steps`]: promises, the pre-check, the nothing-lost
//! check, exploring, checking, the report) with the run's pool answering
//! them ([`PoolAsk`]), in a scratch directory made for the run and removed
//! after it, whatever happened.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use crate::sweep::RunError;
use crate::sweep::{PoolAsk, Session};
use blackout_analysis::fix::FIX_VERIFICATIONS_MAX;
use blackout_analysis::group::Analysis;
use blackout_analysis::report::RunReport;
use blackout_analysis::steps::{begin, cannot_run, finish, Begun, Steps};
use blackout_check::materialize::{choose, Cost, MaterializerKind};
use blackout_check::pool::{Pool, PoolConfig, Scratch};
use blackout_check::shell::ShellChecker;
use blackout_check::Checker;
use blackout_explore::dedup::Watch;
use blackout_explore::enumerate::{ConfigError, ExploreConfig, StateDesc};
use blackout_explore::model::Model;
use blackout_explore::state::{FsState, SECTOR_BYTES_DEFAULT};
use blackout_oplog::ops::Name;
use blackout_oplog::promises::{join_lines, Outputs};
use blackout_oplog::trace::Trace;
use blackout_sys::scratch::default_scratch_parent;

use crate::shard::Settings;

/// How to run.
pub struct RunConfig {
    /// The models to explore, in order.
    pub models: Vec<Model>,
    /// The checker.
    pub checker: Box<dyn Checker>,
    /// Checkers run at once (at least 1).
    pub jobs: usize,
    /// Enumeration settings (the model field is set per model).
    pub explore: ExploreConfig,
    /// Sector size for torn writes, in bytes (at least 1).
    pub sector: u64,
    /// Only lines starting with this are promises.
    pub ack_prefix: Option<Vec<u8>>,
    /// The checker tests consistency alone: no promise is needed and the
    /// pre-check is skipped.
    pub consistency_only: bool,
    /// How the run is stopped, followed and where its scratch goes: what
    /// it is handed, not what it finds.
    pub handles: Handles,
    /// Distinct fixes verified per model.
    pub fix_verifications: usize,
    /// How long fix verification may take in all: `None` for as long as
    /// the run took to explore and check
    /// ([`blackout_analysis::report::fix_time_bound`]).
    pub fix_time: Option<Duration>,
    /// How long checking may go on past the representatives (their states
    /// are always checked; the rest of the trace is then explored in full
    /// and checked most novel first until this is spent): `None` for no
    /// bound (every distinct state checked), zero for the representatives
    /// alone. A trace explored in full from the start (short, or
    /// `--exhaustive`) is checked whole whatever this says.
    pub check_budget: Option<Duration>,
    /// A PASS that did not check every distinct state is INCONCLUSIVE
    /// (for gates that must not accept a sample).
    pub require_exact: bool,
    /// How states are shown to the checker: `None` chooses (the FUSE view
    /// for states of 4 MiB or more where this process can mount it, else
    /// directories).
    pub materializer: Option<MaterializerKind>,
    /// Judge every sync call site of the trace under posix
    /// ([`blackout_analysis::needed::judge_syncs`]): needed, not needed, or not known,
    /// within the fix bound's time again.
    pub syncs: bool,
}

/// What a run is handed that does not change what it finds (none of it is
/// in its [`Settings`]): where its scratch goes, how to stop it, what it
/// tells while it runs.
#[derive(Default)]
pub struct Handles {
    /// Where to make the scratch directory (default:
    /// [`default_scratch_parent`]).
    pub scratch_parent: Option<PathBuf>,
    /// Set from outside (Ctrl-C) to stop: running checkers are killed, the
    /// scratch directory removed, and the run returns
    /// [`RunError::Interrupted`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// Called after each checked state with (checked, total).
    pub progress: Option<Box<dyn Fn(usize, usize) + Send + Sync>>,
    /// Called while states are built, with how many so far.
    pub explore_progress: Option<Box<dyn Fn(usize) + Send + Sync>>,
}

/// The check budget by default: a minute of checking past the
/// representatives.
pub const CHECK_BUDGET_DEFAULT: Duration = Duration::from_secs(60);

impl RunConfig {
    /// A config with defaults for a shell checker: posix, one job per CPU,
    /// the default timeout.
    pub fn new(checker: impl Into<String>) -> RunConfig {
        RunConfig::with_checker(Box::new(ShellChecker::new(checker)))
    }

    /// A config with defaults for any checker.
    pub fn with_checker(checker: Box<dyn Checker>) -> RunConfig {
        RunConfig {
            models: vec![Model::Posix],
            checker,
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            explore: ExploreConfig::default(),
            sector: SECTOR_BYTES_DEFAULT,
            ack_prefix: None,
            consistency_only: false,
            handles: Handles::default(),
            fix_verifications: FIX_VERIFICATIONS_MAX,
            fix_time: None,
            check_budget: Some(CHECK_BUDGET_DEFAULT),
            require_exact: false,
            materializer: None,
            syncs: false,
        }
    }

    /// What analysis's steps read of these settings.
    pub fn steps(&self) -> Steps<'_> {
        Steps {
            models: &self.models,
            consistency_only: self.consistency_only,
            timeout: self.checker.timeout(),
            check_budget: self.check_budget,
            require_exact: self.require_exact,
            fix_time: self.fix_time,
            syncs: self.syncs,
            watch: Watch {
                cancel: self.handles.cancel.as_deref(),
                progress: self.handles.explore_progress.as_deref(),
            },
        }
    }

    /// Checks every setting a library caller can get wrong: the enumeration
    /// limits, the sector size, the number of jobs and the checker timeout.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.explore.validate()?;
        if self.sector == 0 {
            return Err(ConfigError::Sector);
        }
        if self.jobs == 0 {
            return Err(ConfigError::Jobs);
        }
        if self.checker.timeout().is_zero() {
            return Err(ConfigError::Timeout);
        }
        Ok(())
    }

    /// Every setting that changes what the run finds (what the parts of a
    /// sharded run must agree on).
    pub fn settings(&self) -> Settings {
        Settings {
            models: self.models.clone(),
            exhaustive_limit: self.explore.exhaustive_limit,
            budget: self.explore.budget,
            seed: self.explore.seed,
            representatives: self.explore.representatives,
            sector: self.sector,
            ack_prefix: self.ack_prefix.as_deref().map(Name::from),
            consistency_only: self.consistency_only,
            verify_fixes: self.fix_verifications,
            checker: self.checker.command().to_string(),
            checker_kind: self.checker.kind(),
            timeout_seconds: self.checker.timeout().as_secs_f64(),
            check_budget_seconds: self.check_budget.map(|b| b.as_secs_f64()),
            block: None,
        }
    }

    /// A config with these settings and their checker, run as they say
    /// (the others at their defaults): what merges the parts of a sharded
    /// run.
    pub fn from_settings(settings: &Settings) -> Result<RunConfig, ConfigError> {
        let timeout = std::time::Duration::try_from_secs_f64(settings.timeout_seconds)
            .map_err(|_| ConfigError::Timeout)?;
        let checker = settings
            .checker_kind
            .checker(settings.checker.clone(), timeout)
            .ok_or(ConfigError::CheckerKind)?;
        let mut cfg = RunConfig::with_checker(checker);
        cfg.models = settings.models.clone();
        cfg.explore = ExploreConfig {
            exhaustive_limit: settings.exhaustive_limit,
            budget: settings.budget,
            seed: settings.seed,
            representatives: settings.representatives,
        };
        cfg.sector = settings.sector;
        cfg.ack_prefix = settings.ack_prefix.as_ref().map(|p| p.0.clone());
        cfg.consistency_only = settings.consistency_only;
        cfg.fix_verifications = settings.verify_fixes;
        cfg.check_budget = match settings.check_budget_seconds {
            Some(b) => Some(Duration::try_from_secs_f64(b).map_err(|_| ConfigError::Timeout)?),
            None => None,
        };
        Ok(cfg)
    }
}

/// Checks a trace: the whole pipeline after recording.
pub fn check_trace(trace: &Trace, cfg: &RunConfig) -> Result<RunReport, RunError> {
    with_pool(trace, cfg, |s, promises| {
        let steps = cfg.steps();
        // The pre-checks' slot is released before the workers start.
        let mut start = match begin(s, &steps, &mut PoolAsk::new(&s.pool), promises)? {
            Begun::Stopped(report) => return Ok(report),
            Begun::Going(start) => start,
        };
        let mut ask = PoolAsk::new(&s.pool);
        let t1 = Instant::now();
        if let Some((id, reason)) = start.check_all(s, &mut ask)? {
            return Ok(start.stop(cannot_run(&id, &reason)));
        }
        let explored_before = start.explore_seconds;
        if steps.checks_rest() {
            let deadline = steps.check_deadline();
            if let Some((id, reason)) = start.rest_in_rounds(s, &steps, &mut ask, deadline)? {
                return Ok(start.stop(cannot_run(&id, &reason)));
            }
        }
        let check_seconds = t1.elapsed().as_secs_f64() - (start.explore_seconds - explored_before);
        Ok(finish(s, &steps, &mut ask, start, check_seconds)?)
    })
    .map(Pooled::report)
}

/// What every kind of run shares around its own steps, and what it found.
pub(crate) struct Pooled<T> {
    pub(crate) value: T,
    /// Processes checkers left running outside their groups, killed.
    pub(crate) orphans_killed: usize,
    /// Whether the checker gets every promise in a file only.
    pub(crate) promises_in_file_only: bool,
    /// How states were shown, and what it cost.
    pub(crate) shown: Cost,
    /// Why the FUSE view was not used, when it was not.
    pub(crate) shown_note: Option<String>,
}

impl Pooled<RunReport> {
    pub(crate) fn report(self) -> RunReport {
        let mut report = self.value;
        report.orphans_killed += self.orphans_killed;
        // The pre-check and the state where nothing was lost hold every
        // promise: if a checker ran, it ran on those.
        report.promises_in_file_only = (report.precheck.is_some() || report.all_applied.is_some())
            && self.promises_in_file_only;
        report.shown = Some(self.shown).filter(|c| c.states > 0);
        report.shown_note = self.shown_note;
        report
    }
}

/// Runs `body` with the pool of a run: the settings validated first, a
/// scratch directory made for it and removed after, whatever the body's
/// result, and what checkers detached from their groups killed.
pub(crate) fn with_pool<T, E: From<RunError>>(
    trace: &Trace,
    cfg: &RunConfig,
    body: impl FnOnce(&Session<'_>, Vec<String>) -> Result<T, E>,
) -> Result<Pooled<T>, E> {
    cfg.validate().map_err(RunError::from)?;
    let outputs = Outputs::new(trace, cfg.ack_prefix.as_deref());
    let promises: Vec<String> = outputs
        .all_promises()
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let parent = cfg
        .handles
        .scratch_parent
        .clone()
        .unwrap_or_else(default_scratch_parent);
    let scratch = Scratch::new(&parent).map_err(RunError::from)?;
    let in_process = cfg.checker.kind() == blackout_check::CheckerKind::Closure;
    let (materializer, shown_note) = choose(
        cfg.materializer,
        &parent,
        in_process,
        state_bytes(trace, cfg.sector),
    )
    .map_err(|e| RunError::Config(ConfigError::Materializer(e)))?;
    let pool = Pool {
        trace,
        outputs: &outputs,
        cfg: PoolConfig {
            checker: cfg.checker.as_ref(),
            materializer: materializer.as_ref(),
            jobs: cfg.jobs,
            sector: cfg.sector,
            cancel: cfg.handles.cancel.as_deref(),
            progress: cfg.handles.progress.as_deref(),
        },
        scratch: &scratch,
    };
    let promised: Arc<[String]> = promises.clone().into();
    let session = Session {
        pool,
        analysis: Analysis {
            trace,
            outputs: &outputs,
            sector: cfg.sector,
            explore: &cfg.explore,
            ack_prefix: cfg.ack_prefix.as_deref(),
            fix_verifications: cfg.fix_verifications,
            fix_deadline: None,
            check_rest: cfg.steps().checks_rest(),
            promised: &promised,
            verify_deadline: None,
        },
    };
    let result = body(&session, promises);
    // What checkers detached from their groups dies before their
    // directories go; the checker may have left read-only directories,
    // which remove_tree copes with.
    let orphans_killed = blackout_sys::proc::reap_orphans();
    let removed = scratch.remove();
    let value = result?;
    removed.map_err(RunError::from)?;
    let promises_in_file_only = cfg
        .checker
        .promises_in_file_only(&join_lines(&outputs.all_promises()));
    Ok(Pooled {
        value,
        orphans_killed,
        promises_in_file_only,
        shown: materializer.cost(),
        shown_note,
    })
}

/// The most file data a state of the trace holds, as the trace starts and
/// as it ends with nothing lost: how much writing a state out would copy.
fn state_bytes(trace: &Trace, sector: u64) -> u64 {
    let full = StateDesc::whole(trace.ops.len());
    FsState::initial(trace)
        .held_bytes()
        .max(FsState::build(trace, &full, sector).held_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{Shard, ShardPart};
    use crate::sharded::{check_shard, merge_parts, MergeError};
    use blackout_analysis::report::Verdict;
    use blackout_explore::enumerate::Representatives;
    use blackout_explore::model::Model;

    fn trace(log: &str) -> Trace {
        blackout_record::replay::trace_of_log(log.as_bytes(), b"/d").unwrap()
    }

    #[test]
    fn settings_out_of_range_are_errors_before_anything_runs() {
        let t = trace("1 write(1, \"\\x6f\\x6b\\x0a\", 3) = 3\n");
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = RunConfig::new("exit 1");
        cfg.handles.scratch_parent = Some(dir.path().to_path_buf());
        for limit in [21, 64, usize::MAX] {
            cfg.explore.exhaustive_limit = limit;
            match check_trace(&t, &cfg) {
                Err(RunError::Config(ConfigError::ExhaustiveLimit(n))) => assert_eq!(n, limit),
                other => panic!("{limit}: {other:?}"),
            }
        }
        cfg.explore.exhaustive_limit = 10;
        cfg.jobs = 0;
        assert!(matches!(
            check_trace(&t, &cfg),
            Err(RunError::Config(ConfigError::Jobs))
        ));
        cfg.jobs = 1;
        cfg.sector = 0;
        assert!(matches!(
            check_trace(&t, &cfg),
            Err(RunError::Config(ConfigError::Sector))
        ));
        // Nothing was made in the scratch parent.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// A report as JSON, without its timings.
    fn without_timings(r: &RunReport) -> String {
        let mut text = Vec::new();
        // What showing states cost differs with the states each process
        // showed.
        let r = RunReport {
            shown: None,
            ..r.clone()
        };
        for line in format!("{r:#?}").lines() {
            if !line.contains("_seconds:") {
                text.push(line.to_string());
            }
        }
        text.join("\n")
    }

    #[test]
    fn a_fix_cut_short_claims_neither_a_pass_nor_a_failure() {
        use blackout_analysis::report::FixSet;
        use blackout_export::json::JsonExporter;
        use blackout_export::{ExportContext, Exporter};
        // A new file written and "saved" without any fsync: two causes
        // (the data, the directory entry), neither fixed alone.
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x68\\x69\", 2) = 2\n\
             1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = RunConfig::new(
            r#"! grep -qx saved "$BLACKOUT_ACKS_FILE" || [ "$(cat a 2>/dev/null)" = hi ]"#,
        );
        cfg.handles.scratch_parent = Some(dir.path().to_path_buf());
        let mut report = check_trace(&t, &cfg).unwrap();
        // This small run verified every fix within its bound.
        assert!(report.fix_bound_seconds >= 5.0, "{report:#?}");
        assert!(report.fix_seconds <= report.fix_bound_seconds + 1.0);
        let m = &mut report.models[0];
        let fix = m.causes[0].fix.as_mut().expect("a verified fix");
        assert!(!fix.cut_short);
        // As a verification the bound stopped reports it.
        fix.cut_short = true;
        fix.passes = false;
        fix.states = 0;
        fix.still_failing = 0;
        fix.simplest_failing = None;
        if let Some(FixSet::Found { check, .. } | FixSet::NotFound { tried: check, .. }) =
            m.fix_set.take()
        {
            m.fix_set = Some(FixSet::CutShort { tried: check });
        }
        let id = t.content_id();
        let cx = ExportContext {
            trace: &t,
            trace_path: None,
            trace_id: &id,
            checker: "check",
            checker_flag: "--checker",
            state_flags: "",
            all_causes: true,
            ack_prefix: None,
        };
        let text = blackout_export::text::render(&report, &cx);
        let fix_line = text
            .lines()
            .find(|l| l.trim_start().starts_with("fix:"))
            .unwrap();
        assert!(
            fix_line.contains("not known: fix verification stopped at its time bound"),
            "{text}"
        );
        assert!(!fix_line.contains("makes all") && !fix_line.contains("not enough"));
        if report.models[0].fix_set.is_some() {
            assert!(text.contains("fix for every cause not known"), "{text}");
        }
        let json: serde_json::Value =
            serde_json::from_slice(&JsonExporter.export(&report, &cx)).unwrap();
        let fix = &json["result"]["models"][0]["causes"][0]["fix"];
        assert_eq!(fix["cut_short"], true, "{fix:#}");
        assert_eq!(fix["passes"], false);
    }

    /// Seven unsynced appends to `a`, each promised: representatives of
    /// few classes, and a rest of a hundred and more distinct states.
    fn appends() -> Trace {
        let mut log =
            String::from("1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT|O_APPEND, 0644) = 3\n");
        for i in 0..7 {
            log.push_str(&format!(
                "1 write(3, \"\\x3{i}\\x3{i}\", 2) = 2\n1 write(1, \"\\x3{i}\\x0a\", 2) = 2\n"
            ));
        }
        trace(&log)
    }

    /// A checker that sleeps `secs` per state and accepts any state that
    /// holds `a` once something was promised.
    fn slow_checker(secs: &str) -> Box<dyn Checker> {
        Box::new(ShellChecker::new(format!(
            r#"sleep {secs}; ! grep -q . "$BLACKOUT_ACKS_FILE" || [ -e a ]"#
        )))
    }

    #[test]
    fn the_check_budget_ends_the_rest_and_the_verdict_says_it_is_a_sample() {
        let t = appends();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = RunConfig::with_checker(slow_checker("0"));
        cfg.handles.scratch_parent = Some(dir.path().to_path_buf());
        cfg.explore.representatives = Representatives::PerClass(1);
        cfg.jobs = 2;
        cfg.fix_verifications = 0;
        // Budget enough: every distinct state, as exhaustively.
        let whole = check_trace(&t, &cfg).unwrap();
        assert!(whole.exact, "{}", whole.reason);
        assert_eq!(whole.states_checked, whole.states_distinct);
        let mut all = RunConfig::with_checker(slow_checker("0"));
        all.handles.scratch_parent = cfg.handles.scratch_parent.clone();
        all.explore.representatives = Representatives::Exhaustive;
        all.check_budget = None;
        all.fix_verifications = 0;
        let exhaustive = check_trace(&t, &all).unwrap();
        assert_eq!(whole.verdict, exhaustive.verdict);
        assert_eq!(whole.states_distinct, exhaustive.states_distinct);
        // A budget that ends the rest: a sample, said so; its shards
        // merge into a sample too, with what they left unchecked counted.
        cfg.checker = slow_checker("0.03");
        cfg.check_budget = Some(Duration::from_millis(150));
        let sample = check_trace(&t, &cfg).unwrap();
        assert!(!sample.exact);
        assert!(
            sample.states_checked < sample.states_distinct,
            "{}",
            sample.reason
        );
        assert!(
            sample
                .reason
                .contains("the check budget of 0.15 s ended the rest"),
            "{}",
            sample.reason
        );
        let parts: Vec<ShardPart> = (1..=2)
            .map(|index| check_shard(&t, &cfg, Shard { index, count: 2 }).unwrap())
            .map(|p| ShardPart::read(p.to_json().as_bytes()).unwrap())
            .collect();
        assert!(parts.iter().any(|p| p.unchecked > 0));
        let merged = merge_parts(&t, &cfg, &parts).unwrap();
        assert!(!merged.exact);
        assert_eq!(merged.states_distinct, whole.states_distinct);
        let unchecked: usize = parts.iter().map(|p| p.unchecked).sum();
        assert_eq!(merged.states_checked + unchecked, merged.states_distinct);
        // A part that drops a state it checked is refused, budget or not.
        let mut short = parts.clone();
        let k = short.iter().position(|p| !p.states.is_empty()).unwrap();
        short[k].states.pop();
        assert!(matches!(
            merge_parts(&t, &cfg, &short),
            Err(MergeError::Part(_))
        ));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn three_shards_merged_make_the_single_runs_report() {
        // A new file written without any fsync, then "saved".
        let t = trace(
            "1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
             1 write(3, \"\\x68\\x69\", 2) = 2\n\
             1 openat(AT_FDCWD, \"\\x62\", O_WRONLY|O_CREAT, 0644) = 4\n\
             1 write(4, \"\\x68\\x6f\", 2) = 2\n\
             1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
        );
        let dir = tempfile::tempdir().unwrap();
        let checker =
            r#"! grep -qx saved "$BLACKOUT_ACKS_FILE" || [ "$(cat a b 2>/dev/null)" = hiho ]"#;
        let mut cfg = RunConfig::new(checker);
        cfg.models = Model::ALL.to_vec();
        cfg.handles.scratch_parent = Some(dir.path().to_path_buf());
        let single = check_trace(&t, &cfg).unwrap();
        assert_eq!(single.verdict, Verdict::Fail);
        let parts: Vec<ShardPart> = (1..=3)
            .map(|index| check_shard(&t, &cfg, Shard { index, count: 3 }).unwrap())
            .map(|p| ShardPart::read(p.to_json().as_bytes()).unwrap())
            .collect();
        // Each distinct state but the one where nothing was lost is
        // checked by exactly one shard.
        let checked: usize = parts.iter().map(|p| p.states.len()).sum();
        assert_eq!(checked + 1, single.states_checked);
        let merged = merge_parts(&t, &cfg, &parts).unwrap();
        assert_eq!(without_timings(&single), without_timings(&merged));
        let refused = |parts: &[ShardPart], cfg: &RunConfig| match merge_parts(&t, cfg, parts) {
            Err(MergeError::Part(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(refused(&parts[..2], &cfg).starts_with("missing shard 3/3"));
        let twice = [parts[0].clone(), parts[0].clone(), parts[2].clone()];
        assert!(refused(&twice, &cfg).starts_with("shard 1/3 is given twice"));
        let mut other = RunConfig::new(checker);
        other.models = Model::ALL.to_vec();
        other.explore.budget = 8;
        assert!(
            refused(&parts, &other).contains("other settings than this merge's (budget 64, not 8")
        );
        let mut budget = parts.clone();
        budget[1].settings.budget = 8;
        budget[1].fingerprint = budget[1].settings.fingerprint();
        assert!(refused(&budget, &cfg).starts_with(
            "shard 2/3 was made with other settings than shard 1/3 (budget 8, not 64;"
        ));
        // A state missing from its part is never a pass.
        let mut short = parts.clone();
        let k = short.iter().position(|p| !p.states.is_empty()).unwrap();
        short[k].states.pop();
        assert!(refused(&short, &cfg).contains("is in no part"));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
