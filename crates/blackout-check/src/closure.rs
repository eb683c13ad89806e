//! `ClosureChecker`: a Rust closure judges each state inside the calling
//! process (no process per state), for durability tests run by `cargo test`.
//!
//! The closure gets the state's directory and the promises made before the
//! crash, and returns `Ok(())` or the reason it rejects the state. It runs on
//! a helper thread of the worker, kept from state to state (starting a
//! thread per state cost more than writing the state): a panic is caught
//! and rejects the state with the panic's message as the reason; a closure
//! still running at the deadline is abandoned (its thread left to finish on
//! its own, the worker starting a new helper) and the state is
//! [`Outcome::TimedOut`]. A thread cannot be killed: an abandoned closure
//! may still read (or write) the worker's slot while the next state is
//! written there; its answer is never used.

use std::cell::RefCell;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::outcome::Outcome;
use crate::shell::CHECKER_TIMEOUT_SECONDS_DEFAULT;
use crate::slot::Slot;
use crate::{Checker, StateFiles};
pub use blackout_oplog::outcome::panic_message;

/// What a [`ClosureChecker`] calls on each state: the state's directory and
/// the promises made before the crash, in order; `Err(reason)` rejects it.
///
/// ```
/// use std::sync::Arc;
/// use blackout_check::closure::CheckFn;
///
/// let f: Arc<CheckFn> = Arc::new(|dir, promised| {
///     if promised.is_empty() || dir.join("a").exists() { Ok(()) } else { Err("a lost".into()) }
/// });
/// ```
pub type CheckFn = dyn Fn(&Path, &[String]) -> Result<(), String> + Send + Sync;

/// How often a waiting worker looks at the cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// One state for a helper thread: the closure and what it is called with.
struct Job {
    check: Arc<CheckFn>,
    dir: PathBuf,
    promises: Vec<String>,
}

/// What the closure returned, or the panic it raised.
type Answer = std::thread::Result<Result<(), String>>;

/// A worker's helper thread, which calls closures one state at a time; it
/// ends when its worker drops this (the job channel closes).
struct Helper {
    jobs: mpsc::Sender<Job>,
    answers: mpsc::Receiver<Answer>,
}

impl Helper {
    fn start() -> io::Result<Helper> {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (answer_tx, answers) = mpsc::channel();
        std::thread::Builder::new()
            .name("blackout check".into())
            .spawn(move || {
                for job in job_rx {
                    let answer =
                        catch_unwind(AssertUnwindSafe(|| (job.check)(&job.dir, &job.promises)));
                    if answer_tx.send(answer).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Helper { jobs, answers })
    }
}

thread_local! {
    /// The calling worker's helper, between two states.
    static HELPER: RefCell<Option<Helper>> = const { RefCell::new(None) };
}

/// A checker that calls a closure in this process.
///
/// ```
/// use blackout_check::closure::ClosureChecker;
/// use blackout_check::Checker;
///
/// let checker = ClosureChecker::new("doc is there", |dir, promised| {
///     if promised.is_empty() || dir.join("doc.txt").exists() {
///         Ok(())
///     } else {
///         Err("doc.txt is missing".into())
///     }
/// });
/// assert_eq!(checker.command(), "doc is there");
/// assert_eq!(checker.kind(), blackout_check::CheckerKind::Closure);
/// assert_eq!(checker.timeout().as_secs(), 60);
/// ```
#[derive(Clone)]
pub struct ClosureChecker {
    check: Arc<CheckFn>,
    name: String,
    timeout: Duration,
}

impl std::fmt::Debug for ClosureChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClosureChecker")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ClosureChecker {
    /// A checker named `name` (what `reproduce:` lines show in place of a
    /// command) calling `check`, with the default timeout.
    pub fn new(
        name: impl Into<String>,
        check: impl Fn(&Path, &[String]) -> Result<(), String> + Send + Sync + 'static,
    ) -> ClosureChecker {
        ClosureChecker {
            check: Arc::new(check),
            name: name.into(),
            timeout: Duration::from_secs(CHECKER_TIMEOUT_SECONDS_DEFAULT),
        }
    }

    /// The same checker with another per-state timeout.
    ///
    /// ```
    /// use std::time::Duration;
    /// use blackout_check::closure::ClosureChecker;
    /// use blackout_check::Checker;
    ///
    /// let checker = ClosureChecker::new("any", |_, _| Ok(())).with_timeout(Duration::from_secs(5));
    /// assert_eq!(checker.timeout(), Duration::from_secs(5));
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> ClosureChecker {
        self.timeout = timeout;
        self
    }
}

/// A helper that ended without answering (it cannot: a panic is caught).
fn ended_without_answer() -> Outcome {
    Outcome::Fail {
        status: "panicked".into(),
        reason: "the check ended without an answer".into(),
    }
}

impl Checker for ClosureChecker {
    fn check(
        &self,
        _slot: &Slot,
        state: &StateFiles<'_>,
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Option<Outcome>> {
        let promises: Vec<String> = String::from_utf8_lossy(state.promises)
            .lines()
            .map(str::to_string)
            .collect();
        let job = Job {
            check: Arc::clone(&self.check),
            dir: state.dir.clone(),
            promises,
        };
        // The worker's helper (a new one if the last was abandoned); it is
        // put back only when it answered.
        let helper = match HELPER.with(|h| h.borrow_mut().take()) {
            Some(h) => h,
            None => Helper::start()?,
        };
        if helper.jobs.send(job).is_err() {
            return Ok(Some(ended_without_answer()));
        }
        let deadline = Instant::now() + self.timeout;
        let answer = loop {
            if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                return Ok(None);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Some(Outcome::TimedOut {
                    seconds: self.timeout.as_secs_f64(),
                }));
            }
            match helper.answers.recv_timeout(CANCEL_POLL.min(deadline - now)) {
                Ok(answer) => break answer,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Ok(Some(ended_without_answer()))
                }
            }
        };
        HELPER.with(|h| *h.borrow_mut() = Some(helper));
        Ok(Some(match answer {
            Ok(Ok(())) => Outcome::Pass,
            Ok(Err(reason)) => Outcome::Fail {
                status: "returned Err".into(),
                reason,
            },
            Err(payload) => Outcome::Fail {
                status: "panicked".into(),
                reason: panic_message(payload.as_ref()),
            },
        }))
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn command(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> crate::CheckerKind {
        crate::CheckerKind::Closure
    }

    fn reads_slot_files(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(checker: &ClosureChecker, promises: &[u8]) -> Outcome {
        let tmp = tempfile::tempdir().unwrap();
        let slot = Slot::new(&tmp.path().join("slot")).unwrap();
        let state = StateFiles {
            dir: tmp.path().to_path_buf(),
            acks_file: tmp.path().join("acks"),
            output_file: tmp.path().join("output"),
            id: "c1",
            promises,
        };
        checker.check(&slot, &state, None).unwrap().unwrap()
    }

    #[test]
    fn the_closure_sees_the_promises_and_its_answer_is_the_outcome() {
        let c = ClosureChecker::new("t", |_, p| {
            if p == ["a", "b"] {
                Ok(())
            } else {
                Err(format!("got {p:?}"))
            }
        });
        assert_eq!(judge(&c, b"a\nb\n"), Outcome::Pass);
        assert_eq!(
            judge(&c, b"a\n"),
            Outcome::Fail {
                status: "returned Err".into(),
                reason: "got [\"a\"]".into()
            }
        );
    }

    #[test]
    fn a_panic_rejects_with_its_message_and_a_hang_times_out() {
        let c = ClosureChecker::new("t", |_, _| panic!("bad header"));
        assert_eq!(
            judge(&c, b""),
            Outcome::Fail {
                status: "panicked".into(),
                reason: "bad header".into()
            }
        );
        let c = ClosureChecker::new("t", |_, _| {
            std::thread::sleep(Duration::from_secs(5));
            Ok(())
        })
        .with_timeout(Duration::from_millis(100));
        assert!(matches!(judge(&c, b""), Outcome::TimedOut { .. }));
    }

    #[test]
    fn one_helper_serves_a_worker_and_a_hung_one_is_replaced() {
        let threads = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&threads);
        let c = ClosureChecker::new("t", move |_, p| {
            seen.lock().unwrap().push(std::thread::current().id());
            if p == ["hang"] {
                std::thread::sleep(Duration::from_secs(2));
            }
            Ok(())
        })
        .with_timeout(Duration::from_millis(200));
        assert_eq!(judge(&c, b""), Outcome::Pass);
        assert_eq!(judge(&c, b""), Outcome::Pass);
        assert!(matches!(judge(&c, b"hang\n"), Outcome::TimedOut { .. }));
        // The abandoned helper is still asleep: a new one answers.
        assert_eq!(judge(&c, b""), Outcome::Pass);
        let t = threads.lock().unwrap().clone();
        assert_eq!(t.len(), 4);
        assert_eq!(t[0], t[1], "the same helper thread for both states");
        assert_eq!(t[1], t[2]);
        assert_ne!(t[2], t[3], "a new helper after the hung one");
        assert_ne!(t[0], std::thread::current().id());
    }
}
