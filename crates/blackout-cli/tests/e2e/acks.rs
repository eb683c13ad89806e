//! End-to-end tests of how promises reach the checker: `BLACKOUT_ACKED`
//! while they fit in the environment, `BLACKOUT_ACKS_FILE` always.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{ops_json, run_json, text, Scratch};

/// Writes `data`, fsyncs it and its directory, then prints 10,000 promise
/// lines of 111 bytes (1.1 MB): first 10 (1,110 bytes, which fit in the
/// environment), then ten writes of 999 (110,889 bytes each, which do not).
const WORKLOAD: &str = r#"import os

fd = os.open("data", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"payload\n")
os.fsync(fd)
os.close(fd)
d = os.open(".", os.O_RDONLY)
os.fsync(d)
os.close(d)
n = 0
for size in [10] + [999] * 10:
    out = b"".join(b"ack %06d %s\n" % (i, b"x" * 99) for i in range(n, n + size))
    while out:
        out = out[os.write(1, out):]
    n += size
"#;

/// The number of promise lines the workload prints.
const PROMISES: usize = 10_000;

/// Accepts a state only if `BLACKOUT_ACKS_FILE` holds exactly the promises
/// printed before the crash (the whole lines of `BLACKOUT_OUTPUT_FILE`: a
/// line is a promise once its newline is printed; numbered in order), `BLACKOUT_ACKED` holds the same when they fit in 96 KiB and is
/// unset (with `BLACKOUT_ACKED_IN_FILE=1`) when they do not, and `data` was
/// saved once anything was promised. Each count it checked through
/// `BLACKOUT_ACKED` is appended to SMALL_LOG.
const CHECKER: &str = r#"fail() { echo "$*" >&2; exit 1; }
acks=$BLACKOUT_ACKS_FILE
n=$(wc -l < "$acks")
bytes=$(wc -c < "$acks")
printed=$(wc -l < "$BLACKOUT_OUTPUT_FILE")
[ "$n" -eq "$printed" ] || fail "$n promises in BLACKOUT_ACKS_FILE, $printed printed before the crash"
if [ "$n" -gt 0 ]; then
  last=$(tail -n 1 "$acks" | cut -d' ' -f2)
  [ "$last" = "$(printf %06d $((n - 1)))" ] || fail "the last promise is $last, not $((n - 1))"
fi
if [ "$bytes" -gt 98305 ]; then
  [ "${BLACKOUT_ACKED_IN_FILE-}" = 1 ] || fail "BLACKOUT_ACKED_IN_FILE is not 1 for $bytes bytes"
  [ -z "${BLACKOUT_ACKED+set}" ] || fail "BLACKOUT_ACKED is set for $bytes bytes"
else
  [ -z "${BLACKOUT_ACKED_IN_FILE+set}" ] || fail "BLACKOUT_ACKED_IN_FILE is set for $bytes bytes"
  [ "${BLACKOUT_ACKED-unset}" = "$(cat "$acks")" ] || fail "BLACKOUT_ACKED is not the promises"
  [ "$n" -eq 0 ] || echo "$n" >> SMALL_LOG
fi
[ "$n" -eq 0 ] || [ "$(cat data 2>/dev/null)" = payload ] || fail "data lost after $n promises"
"#;

const NOTE: &str = "note: the promises exceed what BLACKOUT_ACKED may hold (96 KiB)";

/// Writes the workload and the checker into the scratch; returns the
/// workload's and the checker's command lines.
fn write_scripts(s: &Scratch) -> (String, String) {
    let workload = s.path("acks.py");
    fs::write(&workload, WORKLOAD).unwrap();
    let checker = s.path("check.sh");
    let small_log = s.path("small.log");
    fs::write(
        &checker,
        CHECKER.replace("SMALL_LOG", small_log.to_str().unwrap()),
    )
    .unwrap();
    (
        workload.to_str().unwrap().to_string(),
        format!("sh {}", checker.display()),
    )
}

/// Runs the hand-check line `blackout state` prints for state `id`, from a
/// shell whose environment holds a stale `BLACKOUT_ACKED`.
fn check_by_hand(s: &Scratch, trace: &Path, id: &str, checker: &str) -> String {
    let out = s
        .blackout()
        .arg("state")
        .arg(trace)
        .arg(id)
        .arg(s.path(&format!("state-{id}")))
        .args(["--checker", checker])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let line = printed
        .lines()
        .skip_while(|l| *l != "check it by hand:")
        .nth(1)
        .unwrap_or_else(|| panic!("no hand-check line in {printed}"));
    let by_hand = Command::new("sh")
        .arg("-c")
        .arg(line)
        .env("BLACKOUT_ACKED", "stale")
        .output()
        .unwrap();
    assert_eq!(
        by_hand.status.code(),
        Some(0),
        "{line}: {}",
        text(&by_hand.stderr)
    );
    printed
}

/// The id of the state where the crash follows the first output: the one
/// holding the first 10 promises.
fn after_first_output(s: &Scratch, trace: &Path) -> String {
    let v = ops_json(s, trace);
    let first = v["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "output")
        .unwrap_or_else(|| panic!("no output op in {v}"))["index"]
        .as_u64()
        .unwrap();
    format!("c{}", first + 1)
}

#[test]
fn promises_past_the_environment_limit_reach_the_checker_in_the_file() {
    let s = Scratch::new();
    let (workload, checker) = write_scripts(&s);
    let trace = s.path("acks.trace");
    // Stale values in blackout's own environment reach no checker.
    let out = s
        .blackout()
        .env("BLACKOUT_ACKED", "stale")
        .env("BLACKOUT_ACKED_IN_FILE", "stale")
        .args(["run", "--model", "process", "-o"])
        .arg(&trace)
        .args(["--checker", &checker, "--", "python3", &workload])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    s.assert_clean();
    assert!(
        !stdout.contains("Argument list too long") && !stderr.contains("Argument list too long")
    );
    assert!(
        stdout.contains(&format!(" ops; {PROMISES} promises")),
        "{stdout}"
    );
    assert!(
        stdout.contains("data lost after 10000 promises"),
        "the pre-check: {stdout}"
    );
    assert!(stdout.contains("process  PASS"), "{stdout}");
    assert!(stdout.contains("verdict: PASS"), "{stdout}");
    // One note per run, not per state.
    assert_eq!(stdout.matches(NOTE).count(), 1, "{stdout}");
    assert_eq!(stdout.matches("BLACKOUT_ACKS_FILE").count(), 1, "{stdout}");
    // The 10 promises that fit came through BLACKOUT_ACKED (and every
    // state checked with them did).
    let small = fs::read_to_string(s.path("small.log")).unwrap();
    assert!(
        !small.is_empty() && small.lines().all(|l| l == "10"),
        "{small}"
    );

    // The JSON report carries it; every posix state is checked too.
    let (code, v, _) = run_json(
        &s,
        &[
            "--trace",
            trace.to_str().unwrap(),
            "--model",
            "posix",
            "--checker",
            &checker,
        ],
    );
    assert_eq!((code, v["verdict"].as_str()), (0, Some("PASS")), "{v}");
    let result = &v["result"];
    assert_eq!(result["promises_in_file_only"], true, "{v}");
    assert_eq!(result["promises"].as_array().unwrap().len(), PROMISES);
    assert_eq!(result["precheck"]["outcome"], "fail");
    let posix = &result["models"][0];
    assert!(posix["distinct"].as_u64().unwrap() > 11, "{posix}");
    assert!(posix["failing"].as_array().unwrap().is_empty());
    assert!(posix["errors"].as_array().unwrap().is_empty());

    // By hand: the printed line hands the promises over as a run does.
    let all = result["all_applied"]["id"].as_str().unwrap();
    let printed = check_by_hand(&s, &trace, all, &checker);
    assert!(
        printed.contains("the promises exceed what BLACKOUT_ACKED may hold (96 KiB)"),
        "{printed}"
    );
    assert!(printed.contains("env -u BLACKOUT_ACKED "), "{printed}");
    let printed = check_by_hand(&s, &trace, &after_first_output(&s, &trace), &checker);
    assert!(printed.contains("BLACKOUT_ACKED=\"$(cat "), "{printed}");
    assert!(!printed.contains("exceed"), "{printed}");
}

#[test]
fn a_run_whose_promises_fit_makes_no_note() {
    let s = Scratch::new();
    let (_, checker) = write_scripts(&s);
    let (code, v, out) = run_json(
        &s,
        &[
            "--model",
            "process",
            "--checker",
            &checker,
            "--",
            "python3",
            "-c",
            "import os\n\
             fd = os.open('data', os.O_WRONLY | os.O_CREAT, 0o644)\n\
             os.write(fd, b'payload\\n'); os.fsync(fd)\n\
             print('ack 000000 small'); print('ack 000001 small')",
        ],
    );
    assert_eq!(
        (code, v["verdict"].as_str()),
        (0, Some("PASS")),
        "{v}\n{}",
        text(&out.stderr)
    );
    assert!(v["result"].get("promises_in_file_only").is_none(), "{v}");
    let small = fs::read_to_string(s.path("small.log")).unwrap();
    assert!(small.lines().any(|l| l == "2"), "{small}");
}
