//! Memory, measured on its own: a test binary with one test, so that the
//! peak resident set wait4 reports for blackout is blackout's (a child's
//! peak starts from its parent's at fork, and the end-to-end binary grows
//! large running many tests at once).

#[allow(dead_code)]
#[path = "e2e/common.rs"]
mod common;

use common::Scratch;

/// Runs `cmd` to its end and returns (exit code, its peak resident set in
/// KiB), as wait4 reports them for that one child.
#[allow(clippy::zombie_processes)] // reaped by wait4, not Child::wait
fn run_measured(cmd: &mut std::process::Command) -> (i32, i64) {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child's pid, writing into locals we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let pid = libc::wait4(child.id() as i32, &mut status, 0, &mut usage);
        assert_eq!(pid, child.id() as i32);
        usage
    };
    (libc::WEXITSTATUS(status), usage.ru_maxrss)
}

#[test]
fn a_checker_printing_200_mb_costs_no_memory() {
    let s = Scratch::new();
    let checker =
        "head -c 200000000 /dev/zero | tr '\\0' x >&2; echo; echo 'the reason' >&2; exit 1";
    let mut cmd = s.blackout();
    cmd.args([
        "run",
        "--model",
        "process",
        "--consistency-only",
        "--checker",
        checker,
        "--",
        "sh",
        "-c",
        "echo x > f",
    ]);
    let (code, peak_kib) = run_measured(&mut cmd);
    // The checker rejects the state where nothing was lost: HARNESS BROKEN.
    assert_eq!(code, 2);
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
    s.assert_clean();
}
