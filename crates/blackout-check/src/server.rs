//! The checker server: one long-lived checker process per worker, asked
//! about state after state, so a checker pays its start-up (an interpreter,
//! a database opened) once per worker instead of once per state.
//!
//! The protocol (docs/CHECKER.md has examples): blackout starts the command
//! with `sh -c`, in its own process group, with the worker's slot directory
//! as its working directory and `BLACKOUT_CHECKER_SERVER=1` set. For each
//! state it writes one request, a JSON object on one line:
//!
//! ```json
//! {"dir":"/dev/shm/blackout-x/w0/fs","acks_file":"/dev/shm/blackout-x/w0/acks","output_file":"/dev/shm/blackout-x/w0/output","state":"c5.lost3","acked":["ack 1"]}
//! ```
//!
//! and reads one answer line: `ok` accepts the state, `fail` or
//! `fail REASON` rejects it. The state's directory exists only while its
//! request is open. `acked` holds the promises as text (invalid UTF-8
//! replaced); `acks_file` holds them exactly.
//!
//! What goes wrong is reported on the state it happened on, and the server
//! is started afresh for the next one: never a silent pass.
//!
//! - It dies while checking (exits non-zero or is killed by a signal): the
//!   state is asked again of a fresh server, and if that one dies too the
//!   state is rejected, as a spawned checker that crashes is, with the last
//!   line the server wrote to stderr as the reason (a crash that came from
//!   what earlier states left in the server does not count against this
//!   one).
//! - It does not answer within the timeout: the state timed out.
//! - It answers anything else, more than one line, or exits 0 without
//!   answering: the state had no usable answer ([`Outcome::BadAnswer`]).
//! - It writes after its answer, before the next request: the next state
//!   goes to a fresh server.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use blackout_oplog::ops::escape_controls;
use blackout_sys::command::signal_name;
use blackout_sys::proc::{kill_group, wait_fd, wait_group, Ready};

use crate::outcome::Outcome;
use crate::shell::{last_line, shorten};
use crate::slot::Slot;
use crate::{lock, Checker, StateFiles};

/// The longest answer line read, in bytes; a longer one is no answer.
pub const ANSWER_BYTES_MAX: usize = 64 * 1024;

/// How long a server may take to exit once its stdin is closed, before its
/// group is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A checker server command, and how long one answer may take.
pub struct ServerChecker {
    /// The shell command that starts the server.
    pub command: String,
    /// How long one state's answer may take.
    pub timeout: Duration,
    /// The running servers, by the slot directory of the worker that
    /// started them (each worker asks only its own).
    servers: Mutex<HashMap<PathBuf, Server>>,
}

impl ServerChecker {
    /// A server checker with this per-state timeout.
    pub fn new(command: impl Into<String>, timeout: Duration) -> ServerChecker {
        ServerChecker {
            command: command.into(),
            timeout,
            servers: Mutex::new(HashMap::new()),
        }
    }

    fn take(&self, slot: &Slot) -> Option<Server> {
        lock(&self.servers).remove(&slot.root)
    }

    fn put(&self, slot: &Slot, server: Server) {
        lock(&self.servers).insert(slot.root.clone(), server);
    }

    /// Asks a server (the worker's running one, else a new one) about one
    /// state. The server is kept for the next state only if it answered.
    fn ask_once(
        &self,
        slot: &Slot,
        request: &[u8],
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Option<Answer>> {
        let mut server = match self.take(slot) {
            Some(s) => s,
            None => Server::start(&self.command, slot)?,
        };
        let answer = server.ask(request, self.timeout, cancel)?;
        match &answer {
            Some(Answer::Line(line)) if parse(line).is_some() => self.put(slot, server),
            // A server that hangs gets no grace.
            Some(Answer::TimedOut) | None => server.stop(Duration::ZERO),
            _ => server.stop(EXIT_GRACE),
        }
        Ok(answer)
    }
}

impl Checker for ServerChecker {
    fn check(
        &self,
        slot: &Slot,
        state: &StateFiles<'_>,
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Option<Outcome>> {
        let request = request_line(state);
        let mut answer = self.ask_once(slot, &request, cancel)?;
        if let Some(Answer::OutOfTurn) = answer {
            // Out of step after the state before: this one goes to a fresh
            // server.
            answer = self.ask_once(slot, &request, cancel)?;
        }
        if let Some(Answer::Died { .. }) = answer {
            // Confirmed on a fresh server before it counts against the state.
            answer = self.ask_once(slot, &request, cancel)?;
        }
        Ok(answer.map(|a| a.outcome(self.timeout, slot)))
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn command(&self) -> &str {
        &self.command
    }

    fn kind(&self) -> crate::CheckerKind {
        crate::CheckerKind::Server
    }

    fn release(&self, slot: &Slot) {
        if let Some(server) = self.take(slot) {
            server.stop(EXIT_GRACE);
        }
    }
}

impl Drop for ServerChecker {
    fn drop(&mut self) {
        for (_, server) in lock(&self.servers).drain() {
            server.stop(Duration::ZERO);
        }
    }
}

/// One running server.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    /// Bytes read past the last answer line.
    pending: Vec<u8>,
    /// Whether it has been reaped (and its group killed).
    reaped: bool,
}

/// What a server did with one request.
enum Answer {
    /// It answered this line (without its newline).
    Line(Vec<u8>),
    /// It ended without answering (`None`: it closed its stdout and was
    /// killed).
    Died { status: Option<ExitStatus> },
    /// It did not answer in time (it was killed).
    TimedOut,
    /// Its answer line was longer than [`ANSWER_BYTES_MAX`].
    TooLong,
    /// It wrote more than one line (the first, and what followed).
    MoreThanOneLine(Vec<u8>, Vec<u8>),
    /// It wrote something after its last answer (or at start), before this
    /// request (it was not asked).
    OutOfTurn,
}

impl Answer {
    fn outcome(self, timeout: Duration, slot: &Slot) -> Outcome {
        match self {
            Answer::Line(line) => parse(&line).unwrap_or_else(|| Outcome::BadAnswer {
                answer: format!(
                    "the server answered `{}`, not `ok` or `fail REASON`",
                    shorten(&String::from_utf8_lossy(&line))
                ),
            }),
            Answer::TimedOut => Outcome::TimedOut {
                seconds: timeout.as_secs_f64(),
            },
            Answer::TooLong => Outcome::BadAnswer {
                answer: format!("the server's answer was longer than {ANSWER_BYTES_MAX} bytes"),
            },
            Answer::MoreThanOneLine(first, more) => Outcome::BadAnswer {
                answer: format!(
                    "the server answered more than one line (`{}`, then `{}`): an answer is one line",
                    shorten(&escape_controls(&String::from_utf8_lossy(&first))),
                    shorten(&escape_controls(
                        String::from_utf8_lossy(&more).trim_end_matches('\n')
                    ))
                ),
            },
            Answer::OutOfTurn => Outcome::BadAnswer {
                answer: "the server wrote before it was asked (a banner at start?): it must write one answer line per request and nothing else".into(),
            },
            Answer::Died { status } => died(status, slot),
        }
    }
}

/// The outcome for a server that ended without answering (twice).
fn died(status: Option<ExitStatus>, slot: &Slot) -> Outcome {
    let said = Slot::read_back(&slot.stderr)
        .ok()
        .and_then(|b| last_line(&b))
        .unwrap_or_default();
    let Some(status) = status else {
        return Outcome::BadAnswer {
            answer: "the server closed its output without answering".into(),
        };
    };
    let how = match (status.code(), status.signal()) {
        (Some(0), _) => {
            return Outcome::BadAnswer {
                answer: "the server exited (code 0) without answering".into(),
            }
        }
        // The shell could not start it: not found, not executable.
        (Some(126 | 127), _) => {
            return Outcome::CannotRun {
                reason: if said.is_empty() {
                    "the checker server could not be started".into()
                } else {
                    said
                },
            }
        }
        (Some(c), _) => format!("server exited with code {c}"),
        (None, Some(sig)) => format!("server killed by {}", signal_name(sig)),
        _ => "server ended".into(),
    };
    Outcome::Fail {
        status: how,
        reason: said,
    }
}

/// `ok` → pass, `fail [REASON]` → fail; anything else is no answer.
fn parse(line: &[u8]) -> Option<Outcome> {
    let text = std::str::from_utf8(line).ok()?.trim_end_matches('\r');
    if text == "ok" {
        return Some(Outcome::Pass);
    }
    let reason = match text.strip_prefix("fail") {
        Some("") => "",
        Some(rest) if rest.starts_with([' ', '\t']) => rest.trim(),
        _ => return None,
    };
    Some(Outcome::Fail {
        status: "answered fail".into(),
        reason: shorten(&escape_controls(reason)),
    })
}

impl Server {
    /// Starts the server for a worker: in the worker's own thread, so it
    /// shares the worker's view of the scratch directory (its slot only,
    /// where isolation is available).
    fn start(command: &str, slot: &Slot) -> io::Result<Server> {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&slot.root)
            .env(blackout_oplog::protocol::CHECKER_SERVER, "1")
            .env_remove(blackout_oplog::protocol::ACKED)
            .env_remove(blackout_oplog::protocol::ACKED_IN_FILE)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Slot::fresh(&slot.stderr)?)
            .process_group(0);
        let mut child = blackout_sys::proc::spawn(&mut cmd)
            .map_err(|e| crate::shell::spawn_error(&slot.root, e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            kill_group(&child);
            return Err(io::Error::other("the checker server's pipes were not made"));
        };
        blackout_sys::proc::set_nonblocking(stdin.as_fd())?;
        blackout_sys::proc::set_nonblocking(stdout.as_fd())?;
        Ok(Server {
            child,
            stdin,
            stdout,
            pending: Vec::new(),
            reaped: false,
        })
    }

    /// Writes the request and reads one answer line. `None` when cancelled
    /// (the server was stopped).
    fn ask(
        &mut self,
        request: &[u8],
        timeout: Duration,
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Option<Answer>> {
        let deadline = Instant::now() + timeout;
        if self.spoke_out_of_turn()? {
            return Ok(Some(Answer::OutOfTurn));
        }
        match self.send(request, deadline, cancel)? {
            Ready::Ready => {}
            Ready::TimedOut => return Ok(Some(Answer::TimedOut)),
            Ready::Cancelled => return Ok(None),
        }
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).take(end).collect();
                if !self.pending.is_empty() {
                    // More than one line for one state: which one answers
                    // it is unclear, and the next state's would be off by
                    // one.
                    let more = std::mem::take(&mut self.pending);
                    return Ok(Some(Answer::MoreThanOneLine(line, more)));
                }
                return Ok(Some(Answer::Line(line)));
            }
            if self.pending.len() > ANSWER_BYTES_MAX {
                return Ok(Some(Answer::TooLong));
            }
            match wait_fd(self.stdout.as_fd(), false, Some(deadline), cancel)? {
                Ready::Ready => {}
                Ready::TimedOut => return Ok(Some(Answer::TimedOut)),
                Ready::Cancelled => return Ok(None),
            }
            let mut buf = [0u8; 8192];
            match self.stdout.read(&mut buf) {
                Ok(0) => return self.ended().map(Some),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) if retry(&e) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the server wrote something after its last answer, before
    /// this request (then it is out of step, and is not asked).
    fn spoke_out_of_turn(&mut self) -> io::Result<bool> {
        let mut buf = [0u8; 1];
        match self.stdout.read(&mut buf) {
            // End of file: it has gone, which the request will show.
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) if retry(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Writes the whole request, waiting while the pipe is full. A server
    /// that has gone shows as a broken pipe: its answer is then read as end
    /// of file.
    fn send(
        &mut self,
        mut request: &[u8],
        deadline: Instant,
        cancel: Option<&AtomicBool>,
    ) -> io::Result<Ready> {
        while !request.is_empty() {
            match self.stdin.write(request) {
                Ok(n) => request = &request[n..],
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(Ready::Ready),
                Err(e) if retry(&e) => {
                    match wait_fd(self.stdin.as_fd(), true, Some(deadline), cancel)? {
                        Ready::Ready => {}
                        other => return Ok(other),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Ready::Ready)
    }

    /// The server closed its stdout: how it ended (its group is killed).
    fn ended(&mut self) -> io::Result<Answer> {
        let waited = wait_group(&mut self.child, Some(EXIT_GRACE), None)?;
        self.reaped = true;
        Ok(match waited {
            blackout_sys::proc::Waited::Exited(status) => Answer::Died {
                status: Some(status),
            },
            // Closed its stdout but kept running: no answer is coming.
            _ => Answer::Died { status: None },
        })
    }

    /// Closes the server's stdin (its signal to exit), gives it `grace` to
    /// exit, then kills its whole group and reaps it.
    fn stop(self, grace: Duration) {
        let Server {
            mut child,
            stdin,
            reaped,
            ..
        } = self;
        drop(stdin);
        if !reaped {
            let _ = wait_group(&mut child, Some(grace), None);
        }
    }
}

/// The request line for a state, newline included (what `blackout state
/// --checker-server` prints to check a state by hand).
pub fn request_line(state: &StateFiles<'_>) -> Vec<u8> {
    let acked: Vec<String> = state
        .promises
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    let request = Request {
        dir: &state.dir.to_string_lossy(),
        acks_file: &state.acks_file.to_string_lossy(),
        output_file: &state.output_file.to_string_lossy(),
        state: state.id,
        acked,
    };
    let mut line = serde_json::to_vec(&request).unwrap_or_default();
    line.push(b'\n');
    line
}

/// One request, as sent.
#[derive(serde::Serialize)]
struct Request<'a> {
    dir: &'a str,
    acks_file: &'a str,
    output_file: &'a str,
    state: &'a str,
    acked: Vec<String>,
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_ok_or_fail_with_a_reason() {
        assert_eq!(parse(b"ok"), Some(Outcome::Pass));
        assert_eq!(parse(b"ok\r"), Some(Outcome::Pass));
        let fail = |reason: &str| {
            Some(Outcome::Fail {
                status: "answered fail".into(),
                reason: reason.into(),
            })
        };
        assert_eq!(parse(b"fail"), fail(""));
        assert_eq!(parse(b"fail row 3 is missing "), fail("row 3 is missing"));
        assert_eq!(parse(b"fail\trow 3"), fail("row 3"));
        for garbage in [
            &b""[..],
            b"OK",
            b" ok",
            b"failed",
            b"okay",
            b"\xff",
            b"pass",
        ] {
            assert_eq!(parse(garbage), None, "{garbage:?}");
        }
    }

    /// Runs `server` as a checker server on two states in one slot.
    fn two_states(server: &str) -> Vec<Outcome> {
        let dir = tempfile::tempdir().unwrap();
        let slot = Slot::new(&dir.path().join("w0")).unwrap();
        let checker = ServerChecker::new(server, Duration::from_secs(5));
        let mut outcomes = Vec::new();
        for id in ["c1", "c2"] {
            std::fs::create_dir(slot.fs()).unwrap();
            let files = slot.files(id, b"ack 1\n");
            std::fs::write(&files.acks_file, b"ack 1\n").unwrap();
            outcomes.push(checker.check(&slot, &files, None).unwrap().unwrap());
            // Made by hand above, not through a view: removed by hand.
            blackout_sys::scratch::remove_tree(&slot.fs()).unwrap();
        }
        checker.release(&slot);
        outcomes
    }

    #[test]
    fn one_server_answers_state_after_state() {
        // A shell server: counts its requests, so a restart would show.
        let outcomes = two_states(
            r#"n=0; while IFS= read -r req; do n=$((n+1)); case "$req" in *'"state":"c2"'*) echo "fail request $n";; *) echo ok;; esac; done"#,
        );
        assert_eq!(outcomes[0], Outcome::Pass);
        assert_eq!(
            outcomes[1],
            Outcome::Fail {
                status: "answered fail".into(),
                reason: "request 2".into()
            }
        );
    }

    #[test]
    fn an_answer_of_two_lines_is_no_answer_and_the_next_state_goes_to_a_fresh_server() {
        let outcomes = two_states(
            r#"while IFS= read -r req; do printf 'fail integrity_check: *** in database main ***\nPage 3 is never used\n'; done"#,
        );
        for o in &outcomes {
            assert!(
                matches!(o, Outcome::BadAnswer { answer } if answer.contains("more than one line") && answer.contains("`Page 3 is never used`")),
                "{outcomes:?}"
            );
        }
        // A banner: taken for the answer, or seen before the request.
        let outcomes =
            two_states(r#"echo ready; sleep 0.2; while IFS= read -r req; do echo ok; done"#);
        for o in &outcomes {
            assert!(
                matches!(o, Outcome::BadAnswer { answer } if answer.contains("`ready`") || answer.contains("before it was asked")),
                "{outcomes:?}"
            );
        }
    }

    #[test]
    fn a_server_that_cannot_start_cannot_run() {
        let outcomes = two_states("exec /nonexistent/server");
        assert!(
            matches!(&outcomes[0], Outcome::CannotRun { reason } if reason.contains("nonexistent")),
            "{outcomes:?}"
        );
    }

    #[test]
    fn a_server_that_exits_cleanly_without_answering_gave_no_answer() {
        let outcomes = two_states("read -r req; exit 0");
        assert!(
            matches!(&outcomes[0], Outcome::BadAnswer { answer } if answer.contains("without answering")),
            "{outcomes:?}"
        );
    }
}
