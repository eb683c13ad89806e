//! What a run found, as plain data: verdicts, checked states, causes and
//! their verified fixes, per model. Exporters render it; nothing in it needs
//! the trace to be read again except op names. The run's verdict in one
//! sentence that says how much was checked ([`verdict_of`], from what it
//! [`Covered`]): "every crash state was accepted" only when every distinct
//! state of every crash point was; with `require_exact`, a PASS on a
//! sample is INCONCLUSIVE.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use blackout_explore::enumerate::{Coverage, ExploreConfig, StateDesc, Tear, Unit};
use blackout_explore::model::{with_commas, Model};
use blackout_explore::rest::REST_BOUND;
use blackout_oplog::outcome::Outcome;

use crate::explain::{Cause, SyncFix};
use crate::replace::Replace;
pub use crate::verdict::Verdict;

/// The promises made before a crash point: the first ones of a run's
/// promises, shared by every state of the run (a run of thousands of
/// promises holds them once, not once per state). Serialized as the list.
#[derive(Debug, Clone, Default)]
pub struct Promised {
    all: Arc<[String]>,
    n: usize,
}

impl Promised {
    /// The first `n` of `all`.
    pub fn first(all: &Arc<[String]>, n: usize) -> Promised {
        Promised {
            all: Arc::clone(all),
            n: n.min(all.len()),
        }
    }

    /// These promises as a list of their own.
    pub fn of(list: Vec<String>) -> Promised {
        let n = list.len();
        Promised {
            all: list.into(),
            n,
        }
    }
}

impl std::ops::Deref for Promised {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.all[..self.n]
    }
}

/// A list of promises as how many it holds.
fn count<S: serde::Serializer>(p: &Promised, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(p.len() as u64)
}

impl Serialize for Promised {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
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
    pub lost: Arc<[Unit]>,
    /// The write torn, and how.
    pub torn: Option<(usize, Tear)>,
    /// The promises made before the crash (in JSON, how many: the first
    /// ones of the run's).
    #[serde(rename = "promises_made", serialize_with = "count")]
    pub promises: Promised,
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

/// Where a cause bites: the crash points of its states and the ops blamed
/// in them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The earliest crash point of a state with the cause.
    pub crash_first: usize,
    /// The latest.
    pub crash_last: usize,
    /// The earliest op blamed.
    pub op_first: usize,
    /// The latest op blamed.
    pub op_last: usize,
    /// The file or directory the cause is about (where its fix syncs, or
    /// what the blamed ops act on).
    pub path: String,
}

impl Window {
    /// A window of one state: crash point `crash`, op `op` blamed.
    pub fn at(crash: usize, op: usize, path: String) -> Window {
        Window {
            crash_first: crash,
            crash_last: crash,
            op_first: op,
            op_last: op,
            path,
        }
    }

    /// The window grown to hold crash point `crash` and op `op`.
    pub fn extend(&mut self, crash: usize, op: usize) {
        self.crash_first = self.crash_first.min(crash);
        self.crash_last = self.crash_last.max(crash);
        self.op_first = self.op_first.min(op);
        self.op_last = self.op_last.max(op);
    }

    /// Whether it spans more than one crash point or blamed op.
    pub fn is_wide(&self) -> bool {
        self.crash_first != self.crash_last || self.op_first != self.op_last
    }
}

/// Failing states with one cause: the same kind, on the same file or
/// directory, blamed on ops issued the same way (the same source line when
/// stacks were recorded, else the same syscall); their crash points and
/// blamed ops form its [`Window`].
#[derive(Debug, Clone, Serialize)]
pub struct CauseGroup {
    /// The cause, as explained for the simplest state (for a window of
    /// non-atomic crash points, said for the whole window).
    pub cause: Cause,
    /// Where it bites, over all its states.
    pub window: Window,
    /// Where it bites, place by place: its states' crash points in runs of
    /// consecutive ones, each with the ops blamed there (one window for a
    /// cause that bites at one place; a mechanism that bites at several,
    /// a record split at each of several block boundaries, lists each).
    pub windows: Vec<Window>,
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
    /// The syncs that should fix the group's states: every state's own,
    /// verified together as the window's fix.
    pub fixes: Vec<SyncFix>,
    /// For an update made in place that no sync makes atomic: the
    /// replacement that should (a new file renamed over it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replace: Option<Replace>,
    /// The blamed file is a log (only ever appended to, more than once):
    /// no replacement is proposed for it; what fixes a partial record there is its recovery
    /// (or one write per record), which the cause says.
    pub log: bool,
    /// The fix verified, if a sync or a replacement can fix it.
    pub fix: Option<FixCheck>,
}

/// The result of re-exploring with added syncs.
#[derive(Debug, Clone, Serialize)]
pub struct FixCheck {
    /// The syncs added (one, or one per place of a window).
    pub syncs: Vec<SyncFix>,
    /// The updates in place made atomic.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<Replace>,
    /// Where they sit in the re-explored trace (state ids of
    /// `simplest_failing` count them).
    pub added_at: Vec<usize>,
    /// `fsync(.) after op 3 (log line 224)` (`call 224` in a native
    /// recording).
    pub description: String,
    /// Whether the states it is judged on pass with it (never when
    /// `cut_short`): a cause's fix, the states of that cause ([`OwnCheck`]);
    /// the fix for every cause, every state checked.
    pub passes: bool,
    /// Whether the re-exploration was exact: every crash point of the
    /// trace with the syncs explored in full and every distinct state
    /// checked. When not, `passes` speaks for the states checked alone
    /// (the representatives, and as many more as the time bound allowed).
    pub exact: bool,
    /// Fix verification reached its time bound before this re-exploration
    /// was checked to the end (or before it began): whether the syncs make
    /// every state pass is not known. `passes` is then false and says
    /// nothing, `states` and `still_failing` are 0.
    pub cut_short: bool,
    /// Distinct states of the re-exploration.
    pub states: usize,
    /// How many of them were checked (all of them when `exact`).
    pub states_checked: usize,
    /// How many of them still fail.
    pub still_failing: usize,
    /// The simplest still failing (its id with the added sync) and its cause.
    pub simplest_failing: Option<(String, String)>,
    /// A cause's fix, judged on that cause's states alone: a program with
    /// several bugs keeps failing for the others' with any one fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub own: Option<OwnCheck>,
}

impl FixCheck {
    /// Whether every state checked passes with it, every cause's too.
    pub fn passes_all(&self) -> bool {
        !self.cut_short && self.still_failing == 0
    }
}

/// How a cause's fix does on that cause: of the states that still fail with
/// it, those that are the cause's (a state that failed in the run for this
/// cause, or one the run never saw fail, explained as this cause is).
#[derive(Debug, Clone, Serialize)]
pub struct OwnCheck {
    /// The cause's failing states in the run.
    pub states: usize,
    /// The cause's states that still fail with the fix.
    pub still_failing: usize,
    /// The simplest of them (its id with the added syncs) and its cause.
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
    /// Distinct by content.
    pub distinct: usize,
    /// Of them, checked: all of them unless a check budget ended the
    /// rest after the representatives.
    pub states_checked: usize,
    /// Whether the model's verdict is exact: every crash point explored in
    /// full and every distinct state checked (what the enumeration itself
    /// leaves out, subsets past the exhaustive limit, is in `coverage`).
    pub exact: bool,
    /// Rejected states, simplest first (each distinct state once, under its
    /// simplest id in this model).
    pub failing: Vec<Checked>,
    /// States whose check did not finish (timeouts), simplest first.
    pub errors: Vec<Checked>,
    /// What the enumeration did not cover.
    pub coverage: Coverage,
    /// The distinct causes of the failing states, by what they break (a
    /// promise lost, damage after a promise, a failure before any), then
    /// in the order of their simplest states.
    pub causes: Vec<CauseGroup>,
    /// When no single cause's fix makes every state pass: the set of syncs
    /// that does (every state of a cause a sync can fix passes with it), or
    /// why none was found.
    pub fix_set: Option<FixSet>,
}

/// The syncs that together make every state pass.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum FixSet {
    /// Verified: with these syncs every state passes, but those of the
    /// causes no sync fixes (`unfixable`).
    Found {
        /// The re-exploration with the set.
        check: FixCheck,
        /// Whether each sync was tried without and found needed (the
        /// search stops at its bound).
        minimal: bool,
        /// The causes (indices in the model's causes) neither a sync nor a
        /// replacement fixes: every state still failing with the set is
        /// one of theirs. Empty: every state passes.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        unfixable: Vec<usize>,
    },
    /// Every proposed sync together still leaves failing states (besides
    /// those of the causes no sync fixes).
    NotFound {
        /// The re-exploration with all of them.
        tried: FixCheck,
        /// As for `Found`: causes left out of the set. `tried`'s
        /// `simplest_failing` is then the simplest state not theirs.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        unfixable: Vec<usize>,
        /// Of the states still failing, those of the `unfixable` causes.
        #[serde(skip_serializing_if = "is_zero")]
        unfixable_failing: usize,
    },
    /// Fix verification reached its time bound before the set of every
    /// proposed sync was verified: whether it fixes every cause is not
    /// known.
    CutShort {
        /// The re-exploration with all of them, cut short.
        tried: FixCheck,
    },
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
    pub states_checked: usize,
    /// Distinct states explored over all models.
    pub states_distinct: usize,
    /// Whether every model's verdict is exact ([`ModelReport::exact`]):
    /// a PASS then says every crash state was accepted, not a sample.
    pub exact: bool,
    /// The check budget the run had after its representatives, in
    /// seconds; `None`: none (every state checked).
    pub check_budget_seconds: Option<f64>,
    /// Seconds spent enumerating, building and hashing states.
    pub explore_seconds: f64,
    /// Seconds spent writing states out and running the checker.
    pub check_seconds: f64,
    /// Seconds spent verifying fixes (re-exploring with syncs added and
    /// checking the new states).
    pub fix_seconds: f64,
    /// How long fix verification could take at most: as long as exploring
    /// and checking took (`fix_time_bound` of the grouping); a verification
    /// still running then is cut short ([`FixCheck::cut_short`]).
    pub fix_bound_seconds: f64,
    /// With `--syncs`: every sync call site judged needed or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syncs: Option<crate::syncs::SyncsReport>,
    /// With `--fail-syncs`: every sync call site made to fail in turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_syncs: Option<crate::failsyncs::FailSyncsReport>,
    /// The enumeration settings, for the coverage statement.
    #[serde(skip)]
    pub explore: ExploreConfig,
    /// Processes the checker left running outside its process group
    /// (detached with `setsid`, say); they were killed.
    #[serde(skip_serializing_if = "is_zero")]
    pub orphans_killed: usize,
    /// The promises were too long for the checker's environment: it got
    /// them only in a file (`BLACKOUT_ACKS_FILE`), on the states that hold
    /// them all at least.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub promises_in_file_only: bool,
    /// How the states were shown to the checker and what that cost
    /// (absent when none was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown: Option<blackout_explore::state::Cost>,
    /// Why the fast way of showing states was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown_note: Option<String>,
    /// With `--backend block`: the real file system's side of the run
    /// (the JSON report puts it beside this one, not inside).
    #[serde(skip)]
    pub block: Option<crate::block::BlockSide>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl RunReport {
    /// The verdict that sets the exit code: the real file system's when a
    /// block run checked it, else this report's.
    pub fn final_verdict(&self) -> Verdict {
        match self.block.as_ref().and_then(|b| b.report.as_ref()) {
            Some(b) => b.verdict,
            None => self.verdict,
        }
    }

    /// Keeps `--fail-syncs`' report: a run that passed fails when a sync
    /// made to fail loses promised data, its reason says so.
    pub fn set_failed_syncs(&mut self, f: crate::failsyncs::FailSyncsReport) {
        if f.fails() && self.verdict == Verdict::Pass {
            let n = f.sites.iter().filter(|c| c.outcome.fails()).count();
            self.verdict = Verdict::Fail;
            self.reason = format!(
                "with a sync failing, the program loses promised data ({n} of {} call sites made to fail; see failed syncs); as recorded, {}",
                f.sites.len(),
                self.reason
            );
        }
        self.failed_syncs = Some(f);
    }

    /// A report of a run that stopped before exploring.
    pub fn early(
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
            states_checked: 0,
            states_distinct: 0,
            exact: true,
            check_budget_seconds: None,
            explore_seconds: 0.0,
            check_seconds: 0.0,
            fix_seconds: 0.0,
            fix_bound_seconds: 0.0,
            syncs: None,
            failed_syncs: None,
            explore: ExploreConfig::default(),
            orphans_killed: 0,
            promises_in_file_only: false,
            shown: None,
            shown_note: None,
            block: None,
        }
    }
}

/// The least time fix verification gets, in seconds, however fast the run
/// it verifies was (a small run still verifies its fixes).
pub const FIX_SECONDS_MIN: u64 = 5;

/// How long a run's fix verification may take at most: as long as the run
/// took to explore and check (`run_seconds`), and at least
/// [`FIX_SECONDS_MIN`]. Every fix re-explores the trace, so without a bound
/// verifying 16 fixes of a large run would take 16 times as long as the run.
///
/// ```
/// use std::time::Duration;
/// use blackout_analysis::report::fix_time_bound;
///
/// assert_eq!(fix_time_bound(0.5), Duration::from_secs(5));
/// assert_eq!(fix_time_bound(42.0), Duration::from_secs(42));
/// ```
pub fn fix_time_bound(run_seconds: f64) -> Duration {
    let least = Duration::from_secs(FIX_SECONDS_MIN);
    Duration::try_from_secs_f64(run_seconds).map_or(least, |d| d.max(least))
}

/// How much of a run's exploration was checked: what its verdict may
/// claim ([`verdict_of`]).
pub struct Covered {
    /// Distinct states checked.
    pub checked: usize,
    /// Distinct states explored.
    pub distinct: usize,
    /// Every crash point explored in full and every distinct state checked.
    pub exact: bool,
    /// Every crash point explored in full.
    pub in_full: bool,
    /// With representatives: how many classes.
    pub classes: Option<usize>,
    /// The check budget past the representatives.
    pub budget: Option<Duration>,
    /// The check budget ended the rest before all of it was explored.
    pub rest_cut: bool,
    /// The enumeration sampled subsets past the exhaustive limit.
    pub subsets_left_out: bool,
    /// The exhaustive limit.
    pub limit: usize,
}

impl Covered {
    /// What was checked, for people: `2,449 of 2,449 distinct states
    /// checked`; when the rest of the trace was not explored, how many
    /// distinct states there are is not known: `1,369 distinct states
    /// checked`.
    pub fn counts(&self) -> String {
        if self.in_full {
            format!(
                "{} of {} distinct states checked",
                with_commas(self.checked),
                with_commas(self.distinct)
            )
        } else {
            format!("{} distinct states checked", with_commas(self.checked))
        }
    }

    /// Why a run checked a sample: `representatives of all 43 classes; the
    /// check budget of 60 s ended the rest`.
    pub fn why(&self) -> String {
        let mut parts = Vec::new();
        if let Some(n) = self.classes {
            parts.push(format!("representatives of all {} classes", with_commas(n)));
        }
        if self.budget == Some(Duration::ZERO) {
            parts.push("--check-budget 0 checked no more".to_string());
        } else {
            if !self.in_full && !self.rest_cut {
                parts.push(format!(
                    "the rest explored only at the crash points that fit in {} states ({} ops lost or torn)",
                    with_commas(usize::try_from(REST_BOUND.states).unwrap_or(usize::MAX)),
                    with_commas(usize::try_from(REST_BOUND.units).unwrap_or(usize::MAX))
                ));
            }
            if let (Some(b), true) = (self.budget, self.checked < self.distinct || self.rest_cut) {
                parts.push(format!(
                    "the check budget of {} s ended the rest",
                    b.as_secs_f64()
                ));
            }
        }
        parts.join("; ")
    }
}

/// The run's verdict from its models' and why, in one sentence that says
/// how much was checked: "every crash state was accepted" only when every
/// distinct state of every crash point was. With `require_exact`, a PASS
/// on a sample is INCONCLUSIVE.
pub fn verdict_of(
    models: &[ModelReport],
    covered: &Covered,
    require_exact: bool,
) -> (Verdict, String) {
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
    let sample = |text: String| {
        if covered.exact {
            text
        } else {
            format!("{text} ({}, {})", covered.counts(), covered.why())
        }
    };
    match verdict {
        Verdict::Fail => (
            verdict,
            sample(format!(
                "a crash state violates the checker under {}",
                names(Verdict::Fail)
            )),
        ),
        Verdict::Error => (
            verdict,
            sample(format!(
                "some states could not be checked (the checker timed out) under {}",
                names(Verdict::Error)
            )),
        ),
        _ if covered.exact && covered.subsets_left_out => (
            verdict,
            format!(
                "every crash state explored was accepted ({}; past {} pending ops the subsets were sampled: see not covered)",
                covered.counts(),
                covered.limit
            ),
        ),
        _ if covered.exact => (
            verdict,
            format!("every crash state was accepted ({})", covered.counts()),
        ),
        _ if require_exact => (
            Verdict::Inconclusive,
            format!(
                "a PASS on a sample, and --require-exact accepts none: {} ({}), all accepted",
                covered.counts(),
                covered.why()
            ),
        ),
        _ => (
            verdict,
            format!(
                "{}, all accepted ({}): a sample, not every crash state",
                covered.counts(),
                covered.why()
            ),
        ),
    }
}
