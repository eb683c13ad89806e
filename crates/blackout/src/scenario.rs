//! Durability assertions inside `cargo test`: a [`Scenario`] records its
//! workload, explores every crash state and runs a check closure on each,
//! in the test itself.
//!
//! How a scenario runs. The test (the parent) re-executes its own test
//! binary under the recorder, selecting exactly the current test
//! (`TEST --exact --test-threads=1`) with [`SCENARIO_ENV`] naming the
//! scenario. In that child the same test reaches the same [`Scenario::run`],
//! which sees the marker, runs only the workload closure in the directory
//! under test and ends the process at once, so nothing else of the test
//! runs. Promises travel on an fd of their own ([`PROMISE_FD`]), which the
//! recorder takes as the output stream, so each lands at its place in the op
//! order and nothing the test harness prints is mistaken for one. Back in
//! the parent the trace is checked as `blackout run` would, the check
//! closure judging each distinct state in worker threads
//! ([`ClosureChecker`]): the same pre-check, nothing-lost check, causes and
//! verified fixes, and the same report.
//!
//! On a real file system ([`Scenario::block`]) the workload is recorded
//! in the file system's device session, its promises logged as marks
//! between the device's writes, and the scenario is checked as `blackout
//! run --backend block` checks a workload ([`BlockRun`]): under posix, and
//! on every crash state of the device after the file system's recovery.

use std::fmt::Display;
use std::path::Path;
use std::time::Duration;

use blackout_analysis::report::RunReport;
use blackout_block::session::FsKind;
use blackout_check::closure::ClosureChecker;
use blackout_explore::model::Model;
pub use blackout_export::scenario::Report;
use blackout_oplog::trace::Trace;
use blackout_record::scenario::{recorded_whole, run_child};
pub use blackout_record::scenario::{Promises, WorkloadResult, PROMISE_FD, SCENARIO_ENV};
use blackout_record::{RecordConfig, Recorder, StraceRecorder};

use crate::block::run::{BlockRun, BlockSource};
use crate::block::BlockConfig;
use crate::run::{check_trace, RunConfig};

/// What a report adds when a cause was not traced to a source line.
const NO_SOURCE_LINES: &str = "note: a cause without a source line: strace unwinds a Rust test \
     thread reliably only with frame pointers (RUSTFLAGS=\"-C force-frame-pointers=yes\")\n";

type WorkloadFn = dyn Fn(&Path, &Promises) -> WorkloadResult;
type SetupFn = dyn Fn(&Path) -> WorkloadResult;
type CheckFn = dyn Fn(&Path, &[String]) -> Result<(), String> + Send + Sync;

/// A durability test: a workload that makes promises and a check that says
/// whether a crash state keeps them.
///
/// ```no_run
/// use std::fs::{self, File};
/// use std::path::Path;
///
/// fn save(dir: &Path, text: &str) -> std::io::Result<()> {
///     let tmp = dir.join("doc.tmp");
///     fs::write(&tmp, text)?;
///     File::open(&tmp)?.sync_all()?;
///     fs::rename(&tmp, dir.join("doc"))?;
///     File::open(dir)?.sync_all()
/// }
///
/// blackout::Scenario::new("save")
///     .workload(|dir, p| {
///         save(dir, "v2")?;
///         p.promise("saved v2");
///         Ok(())
///     })
///     .check(|state, promised| {
///         let doc = fs::read_to_string(state.join("doc")).unwrap_or_default();
///         if promised.is_empty() || doc == "v2" {
///             Ok(())
///         } else {
///             Err(format!("promised v2, found {doc:?}"))
///         }
///     })
///     .run()
///     .assert_pass();
/// ```
pub struct Scenario {
    label: String,
    models: Vec<Model>,
    workload: Option<Box<WorkloadFn>>,
    setup: Option<Box<SetupFn>>,
    volatile: Vec<String>,
    check: Option<std::sync::Arc<CheckFn>>,
    test_name: Option<String>,
    timeout: Option<Duration>,
    jobs: Option<usize>,
    check_budget: Option<Option<Duration>>,
    stacks: bool,
    syncs: bool,
    strace: Option<std::path::PathBuf>,
    keep_trace: Option<std::path::PathBuf>,
    materializer: Option<blackout_check::materialize::MaterializerKind>,
    block: Option<FsKind>,
}

impl Scenario {
    /// A scenario named `label` (unique within its test), exploring every
    /// model.
    ///
    /// ```
    /// let s = blackout::Scenario::new("save");
    /// assert_eq!(s.label(), "save");
    /// ```
    pub fn new(label: impl Into<String>) -> Scenario {
        Scenario {
            label: label.into(),
            models: Model::ALL.to_vec(),
            workload: None,
            setup: None,
            volatile: Vec::new(),
            check: None,
            test_name: None,
            timeout: None,
            jobs: None,
            check_budget: None,
            stacks: true,
            syncs: false,
            strace: None,
            keep_trace: None,
            materializer: None,
            block: None,
        }
    }

    /// The scenario's label.
    ///
    /// ```
    /// assert_eq!(blackout::Scenario::new("x").label(), "x");
    /// ```
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Explores only these models (default: all, weakest first).
    ///
    /// ```
    /// use blackout::explore::model::Model;
    /// let s = blackout::Scenario::new("save").models([Model::Posix]);
    /// ```
    pub fn models(mut self, models: impl IntoIterator<Item = Model>) -> Scenario {
        self.models = models.into_iter().collect();
        self
    }

    /// The workload: gets the directory under test (also its working
    /// directory) and the handle to make promises with.
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").workload(|dir, p| {
    ///     std::fs::write(dir.join("a"), "x")?;
    ///     p.promise("wrote a");
    ///     Ok(())
    /// });
    /// ```
    pub fn workload(
        mut self,
        f: impl Fn(&Path, &Promises) -> WorkloadResult + 'static,
    ) -> Scenario {
        self.workload = Some(Box::new(f));
        self
    }

    /// The directory under test before the workload: `f` fills an empty
    /// directory, unrecorded (as `blackout run --setup` does), and what it
    /// leaves is the state every crash starts from. It runs once, in the
    /// test, before the workload is recorded.
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").setup(|dir| {
    ///     std::fs::write(dir.join("doc"), "v1")?;
    ///     Ok(())
    /// });
    /// ```
    pub fn setup(mut self, f: impl Fn(&Path) -> WorkloadResult + 'static) -> Scenario {
        self.setup = Some(Box::new(f));
        self
    }

    /// Files the program rebuilds on restart (globs on the file name, as
    /// `blackout run --volatile`): their contents are not durable state,
    /// and a shared mapping of them (SQLite's WAL index, `*-shm`) is
    /// allowed.
    ///
    /// ```
    /// let s = blackout::Scenario::new("wal").volatile(["*-shm"]);
    /// ```
    pub fn volatile<S: Into<String>>(mut self, globs: impl IntoIterator<Item = S>) -> Scenario {
        self.volatile = globs.into_iter().map(Into::into).collect();
        self
    }

    /// The check: gets a crash state's directory and the promises made
    /// before the crash, and returns `Ok(())` or why the state is wrong. A
    /// panic rejects the state with its message.
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").check(|state, promised| {
    ///     if promised.is_empty() || state.join("a").exists() {
    ///         Ok(())
    ///     } else {
    ///         Err("a is missing")
    ///     }
    /// });
    /// ```
    pub fn check<E: Display>(
        mut self,
        f: impl Fn(&Path, &[String]) -> Result<(), E> + Send + Sync + 'static,
    ) -> Scenario {
        self.check = Some(std::sync::Arc::new(move |dir: &Path, p: &[String]| {
            f(dir, p).map_err(|e| e.to_string())
        }));
        self
    }

    /// The test's path as libtest names it (`tests::save`), when it cannot
    /// be read from the test thread's name (a harness that runs tests on
    /// the main thread).
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").test_name("tests::save_survives");
    /// ```
    pub fn test_name(mut self, name: impl Into<String>) -> Scenario {
        self.test_name = Some(name.into());
        self
    }

    /// How long the check may take on one state (default 60 s).
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").timeout(std::time::Duration::from_secs(5));
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Scenario {
        self.timeout = Some(timeout);
        self
    }

    /// Checks run at once (default: one per CPU).
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").jobs(2);
    /// ```
    pub fn jobs(mut self, jobs: usize) -> Scenario {
        self.jobs = Some(jobs);
        self
    }

    /// How long checking may go on past the representatives of a long
    /// trace (default 60 s, as `blackout run --check-budget`; `None` checks
    /// every state, zero the representatives alone). A report on a sample
    /// says so, and [`Report::assert_pass`] accepts only an exact PASS.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = blackout::Scenario::new("save").check_budget(Some(Duration::from_secs(300)));
    /// ```
    pub fn check_budget(mut self, budget: Option<Duration>) -> Scenario {
        self.check_budget = Some(budget);
        self
    }

    /// Records each call's stack to name the source line of every op
    /// (default on).
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").stacks(false);
    /// ```
    pub fn stacks(mut self, on: bool) -> Scenario {
        self.stacks = on;
        self
    }

    /// Judges every sync the workload made, as `blackout run --syncs`
    /// (default off): [`Report::syncs`] says which are needed, and
    /// [`Report::assert_sync_needed`] keeps one so.
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").syncs(true);
    /// ```
    pub fn syncs(mut self, on: bool) -> Scenario {
        self.syncs = on;
        self
    }

    /// The strace binary to record with (default: `strace` on `PATH`).
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").strace("/usr/local/bin/strace");
    /// ```
    pub fn strace(mut self, path: impl Into<std::path::PathBuf>) -> Scenario {
        self.strace = Some(path.into());
        self
    }

    /// Saves the recorded trace at `path`, which the report's `reproduce:`
    /// lines then name (`blackout state PATH ID DIR` writes a state out to
    /// look at; `blackout ops PATH` lists the ops).
    ///
    /// ```
    /// let s = blackout::Scenario::new("save").keep_trace("target/save.trace");
    /// ```
    pub fn keep_trace(mut self, path: impl Into<std::path::PathBuf>) -> Scenario {
        self.keep_trace = Some(path.into());
        self
    }

    /// How crash states reach the check (as `blackout run --materializer`):
    /// written out as directories, or shown through a FUSE view served by a
    /// child process per state. By default the run chooses, as the command
    /// line does.
    ///
    /// ```
    /// use blackout::check::materialize::MaterializerKind;
    /// let s = blackout::Scenario::new("save").materializer(MaterializerKind::Dir);
    /// ```
    pub fn materializer(mut self, kind: blackout_check::materialize::MaterializerKind) -> Scenario {
        self.materializer = Some(kind);
        self
    }

    /// Runs the workload on a real file system (as `blackout run --backend
    /// block --fs FS`): recorded in a device session, checked under posix
    /// (unless [`Scenario::models`] names others) and on every crash state
    /// of the device after the file system's recovery; the verdict is the
    /// file system's. Needs root, `/dev/fuse`, a loop device and the file
    /// system's mkfs.
    ///
    /// ```
    /// use blackout::block_device::session::FsKind;
    /// let s = blackout::Scenario::new("save").block(FsKind::Ext4);
    /// ```
    pub fn block(mut self, fs: FsKind) -> Scenario {
        self.block = Some(fs);
        self
    }

    /// Records the workload, checks every crash state and reports.
    ///
    /// Panics with one line when the scenario cannot be run: no workload
    /// or check, the test's name unknown, the recorder unable to run (no
    /// strace, no ptrace permission), the workload failing.
    ///
    /// A test may run several scenarios (each with its own label) if it
    /// runs them all before asserting on any report: inside the recording
    /// of one, the others return at once with an empty report, verdict
    /// PASS.
    ///
    /// ```no_run
    /// let report = blackout::Scenario::new("nothing")
    ///     .workload(|_, _| Ok(()))
    ///     .check(|_, _| Ok::<(), String>(()))
    ///     .run();
    /// println!("{}", report.text());
    /// ```
    pub fn run(self) -> Report {
        match self.try_run() {
            Ok(report) => report,
            Err(line) => panic!("blackout: scenario `{}`: {line}", self.label),
        }
    }

    fn try_run(&self) -> Result<Report, String> {
        let workload = self
            .workload
            .as_ref()
            .ok_or("no workload: call .workload(...)")?;
        let check = self.check.clone().ok_or("no check: call .check(...)")?;
        if let Some(marker) = std::env::var_os(SCENARIO_ENV) {
            if marker.as_encoded_bytes() == self.label.as_bytes() {
                run_child(workload);
            }
            return Ok(Report::skipped(&self.label));
        }
        let test = self.current_test()?;
        let mut checker = ClosureChecker::new(
            format!("the check of scenario `{}` (cargo test {test})", self.label),
            move |dir: &Path, p: &[String]| check(dir, p),
        );
        if let Some(t) = self.timeout {
            checker = checker.with_timeout(t);
        }
        let mut cfg = RunConfig::with_checker(Box::new(checker));
        cfg.models = match self.block {
            // Beside the posix model, as `blackout run --backend block`.
            Some(_) if self.models == Model::ALL => vec![Model::Posix],
            _ => self.models.clone(),
        };
        if let Some(j) = self.jobs {
            cfg.jobs = j;
        }
        if let Some(b) = self.check_budget {
            cfg.check_budget = b;
        }
        cfg.materializer = self.materializer;
        cfg.syncs = self.syncs;
        cfg.validate().map_err(|e| e.to_string())?;
        let (trace, report) = match self.block {
            None => {
                let trace = self.record(&test)?;
                self.keep(&trace)?;
                let report = check_trace(&trace, &cfg).map_err(|e| e.to_string())?;
                (trace, report)
            }
            Some(fs) => self.run_block(fs, &test, &cfg)?,
        };
        let kept = self.keep_trace.as_deref().map(|p| p.display().to_string());
        let checker = cfg.checker.command().to_string();
        let unlocated = self.stacks
            && report
                .models
                .iter()
                .flat_map(|m| &m.causes)
                .any(|c| c.source.is_none());
        let mut report = Report::new(&self.label, &checker, kept.as_deref(), trace, report);
        if unlocated {
            report.note(NO_SOURCE_LINES);
        }
        Ok(report)
    }

    /// Saves the trace where [`Scenario::keep_trace`] says.
    fn keep(&self, trace: &Trace) -> Result<(), String> {
        if let Some(path) = &self.keep_trace {
            trace
                .save(path)
                .map_err(|e| format!("cannot save the trace at {}: {e}", path.display()))?;
        }
        Ok(())
    }

    /// Records and checks the workload on file system `fs`.
    fn run_block(
        &self,
        fs: FsKind,
        test: &str,
        cfg: &RunConfig,
    ) -> Result<(Trace, RunReport), String> {
        let (record, recorder, init) = self.record_config(test)?;
        let source = BlockSource::Record {
            record: Box::new(record),
            recorder,
        };
        let done = BlockRun::new(BlockConfig::new(fs), cfg).run(source);
        drop(init);
        let done = done.map_err(|e| {
            let mut line = format!("cannot run it on {fs}: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                line.push_str(&format!(": {s}"));
                source = s.source();
            }
            line
        })?;
        let rec = done.recording;
        recorded_whole(test, &rec.stdout, &rec.stderr, rec.trace.exit.code)?;
        self.keep(&rec.trace)?;
        Ok((rec.trace, done.report))
    }

    /// The current test's path: set, else the test thread's name.
    fn current_test(&self) -> Result<String, String> {
        if let Some(t) = &self.test_name {
            return Ok(t.clone());
        }
        match std::thread::current().name() {
            Some(name) if name != "main" && !name.is_empty() => Ok(name.to_string()),
            _ => Err(
                "cannot tell which test this is (it does not run on a thread named after \
                      it): name it with .test_name(\"module::test\")"
                    .into(),
            ),
        }
    }

    /// Records this test binary running only this test, with the marker.
    fn record(&self, test: &str) -> Result<Trace, String> {
        let (cfg, recorder, init) = self.record_config(test)?;
        let rec = recorder
            .record(&cfg)
            .map_err(|e| format!("cannot record the workload: {e}"))?;
        drop(init);
        recorded_whole(test, &rec.stdout, &rec.stderr, rec.trace.exit.code)?;
        Ok(rec.trace)
    }

    /// How to record this test binary running only this test, with the
    /// marker: the config, the recorder, and the setup's tree (removed
    /// when dropped, after the recording).
    fn record_config(
        &self,
        test: &str,
    ) -> Result<(RecordConfig, StraceRecorder, Option<tempfile::TempDir>), String> {
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find the test binary: {e}"))?;
        let mut cfg = RecordConfig::new(vec![
            exe.into_os_string(),
            test.into(),
            "--exact".into(),
            "--nocapture".into(),
            "--test-threads=1".into(),
        ]);
        cfg.output_fd = Some(PROMISE_FD);
        cfg.env = vec![(SCENARIO_ENV.into(), self.label.clone().into())];
        cfg.stacks = self.stacks;
        cfg.timestamps = self.syncs;
        cfg.volatile.clone_from(&self.volatile);
        // The setup's tree, made here (unrecorded) and copied into the
        // directory under test before the workload starts.
        let init = match &self.setup {
            None => None,
            Some(setup) => {
                let tree = tempfile::Builder::new()
                    .prefix("blackout-setup-")
                    .tempdir()
                    .map_err(|e| format!("cannot make the setup's directory: {e}"))?;
                setup(tree.path()).map_err(|e| format!("the setup failed: {e}"))?;
                cfg.init = Some(tree.path().to_path_buf());
                Some(tree)
            }
        };
        let mut recorder = StraceRecorder::default();
        if let Some(strace) = &self.strace {
            recorder.strace.clone_from(strace);
        }
        Ok((cfg, recorder, init))
    }
}
