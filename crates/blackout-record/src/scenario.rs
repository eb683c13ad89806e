//! The recorded side of a test that records itself (`blackout::Scenario`):
//! the test binary re-executed under the recorder with [`SCENARIO_ENV`]
//! naming the scenario runs only that scenario's workload
//! ([`run_child`]), its promises written to [`PROMISE_FD`] ([`Promises`]),
//! and ends; the recording tells whether it ran whole
//! ([`recorded_whole`]).

use std::io::Write;
use std::os::fd::FromRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use blackout_oplog::outcome::panic_message;

/// The environment variable that tells a re-executed test binary which
/// scenario's workload to run.
///
/// ```
/// // Set only in the recorded copy of a test.
/// let recorded = std::env::var_os(blackout_record::scenario::SCENARIO_ENV).is_some();
/// ```
pub const SCENARIO_ENV: &str = "BLACKOUT_SCENARIO";

/// The fd a scenario's workload writes its promises to, one line each.
///
/// ```
/// assert!(blackout_record::scenario::PROMISE_FD > 2);
/// ```
pub const PROMISE_FD: i32 = 63;

/// What a workload closure returns: any error converts with `?`.
///
/// ```
/// fn workload(dir: &std::path::Path) -> blackout_record::scenario::WorkloadResult {
///     std::fs::write(dir.join("a"), "x")?;
///     Ok(())
/// }
/// ```
pub type WorkloadResult = Result<(), Box<dyn std::error::Error>>;

/// The handle a workload makes promises with.
///
/// ```
/// fn workload(p: &blackout_record::scenario::Promises) {
///     p.promise("saved v2");
/// }
/// ```
#[derive(Debug)]
pub struct Promises {
    fd: Option<i32>,
}

impl Promises {
    /// Promises `what` (one line: a newline in it is written as a space):
    /// from now on a crash must not lose it. The check closure gets every
    /// promise made before the crash. Panics on an empty promise (an empty
    /// line is no promise).
    pub fn promise(&self, what: impl AsRef<str>) {
        let what = what.as_ref();
        assert!(
            !what.is_empty(),
            "blackout: an empty promise promises nothing"
        );
        let Some(fd) = self.fd else { return };
        let mut line = what.replace(['\n', '\r'], " ").into_bytes();
        line.push(b'\n');
        // SAFETY: the recorder handed this fd down, open for writing; it is
        // borrowed here and never closed.
        let file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
        if let Err(e) = (&*file).write_all(&line) {
            panic!("blackout: cannot write a promise to fd {fd}: {e}");
        }
    }
}

/// Whether the recorded test ran this scenario's workload to its end: its
/// standard output (the harness's) and standard error, and how it exited.
pub fn recorded_whole(
    test: &str,
    stdout: &[u8],
    stderr: &[u8],
    exit: Option<i32>,
) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(stdout);
    if stdout.contains("test result:") {
        return Err(format!(
            "the recorded test `{test}` ended without reaching this scenario's workload: \
             its name must be exact (.test_name(...)), and a test with several scenarios \
             must run them all before asserting on any report"
        ));
    }
    if exit != Some(0) {
        let stderr = String::from_utf8_lossy(stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!(
            "the workload failed: {}",
            last.unwrap_or("it ended with an error")
        ));
    }
    Ok(())
}

/// In the recorded child: runs the workload in the directory under test and
/// ends the process (0 when it succeeded, else 1 with the error on stderr).
pub fn run_child(workload: &dyn Fn(&Path, &Promises) -> WorkloadResult) -> ! {
    let code = match std::env::current_dir() {
        Err(e) => {
            eprintln!("blackout: no directory under test: {e}");
            1
        }
        Ok(dir) => {
            let promises = Promises {
                fd: Some(PROMISE_FD),
            };
            // Where it panicked, without a backtrace: symbolising one
            // under the recorder (every read of the debug info traced,
            // each with its stack) would take seconds.
            std::panic::set_hook(Box::new(|info| eprintln!("blackout: {info}")));
            match catch_unwind(AssertUnwindSafe(|| workload(&dir, &promises))) {
                Ok(Ok(())) => 0,
                Ok(Err(e)) => {
                    eprintln!("blackout: the workload returned an error: {e}");
                    1
                }
                Err(p) => {
                    eprintln!(
                        "blackout: the workload panicked: {}",
                        panic_message(p.as_ref())
                    );
                    1
                }
            }
        }
    };
    std::process::exit(code)
}
