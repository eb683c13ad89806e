//! Which recorder records: by default the native recorder; strace when a
//! flag asks for what only strace records; and strace, said in one line,
//! where the native recorder cannot trace (here: a kernel that takes no
//! seccomp filters, made by running blackout where installing one fails).

use std::process::Output;

use crate::common::{compile, repo, Scratch};

/// Runs `cmd`: no process under it can install a seccomp filter
/// (`seccomp(2)` fails with ENOSYS, `prctl(PR_SET_SECCOMP)` with EINVAL),
/// as on a kernel built without them.
const NO_SECCOMP_C: &str = r#"
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

int main(int argc, char **argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_SECCOMP, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("no-seccomp");
        return 2;
    }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
"#;

/// `blackout run` of save.sh no-dir-fsync with `extra` flags, under
/// `wrapper` when given.
fn run_save(s: &Scratch, wrapper: Option<&std::path::Path>, extra: &[&str]) -> Output {
    let bin = s.blackout().get_program().to_owned();
    let mut cmd = match wrapper {
        Some(w) => {
            let mut c = std::process::Command::new(w);
            c.arg(bin);
            c
        }
        None => std::process::Command::new(bin),
    };
    cmd.env("TMPDIR", s.path("tmp"));
    let check = repo().join("examples/save/check.sh");
    cmd.arg("run")
        .args(extra)
        .args(["--setup", "printf 'version 1\\n' > doc.txt", "--checker"])
        .arg(format!("sh {}", check.display()))
        .arg("--")
        .arg("sh")
        .arg(repo().join("examples/save/save.sh"))
        .arg("no-dir-fsync");
    cmd.output().unwrap()
}

/// The summary line `recorded N ops … (BY) …` and the verdict line.
fn recorded_by_and_verdict(out: &Output) -> (String, String) {
    let err = String::from_utf8_lossy(&out.stderr);
    let by = err
        .lines()
        .find(|l| l.starts_with("recorded "))
        .and_then(|l| l.split_once(" system calls (")?.1.split_once(')'))
        .map(|(by, _)| by.to_string())
        .unwrap_or_else(|| panic!("no summary line:\n{err}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let verdict = text
        .lines()
        .find(|l| l.starts_with("verdict:"))
        .unwrap_or_else(|| panic!("no verdict:\n{text}\n{err}"))
        .to_string();
    (by, verdict)
}

#[test]
fn the_default_records_natively_and_with_strace_when_a_flag_needs_it() {
    let s = Scratch::new();
    let native = run_save(&s, None, &[]);
    let (by, verdict) = recorded_by_and_verdict(&native);
    assert_eq!(by, "the native recorder");
    assert!(verdict.starts_with("verdict: FAIL"), "{verdict}");
    let stacks = run_save(&s, None, &["--stacks"]);
    let (by, same) = recorded_by_and_verdict(&stacks);
    assert!(by.starts_with("strace "), "{by}");
    assert_eq!(same, verdict);
    assert_eq!(stacks.status.code(), native.status.code());
    s.assert_clean();
}

#[test]
fn where_the_native_recorder_cannot_trace_strace_records_and_one_line_says_why() {
    let s = Scratch::new();
    let wrapper = compile(&s, "no-seccomp", NO_SECCOMP_C);
    let (_, expected) = recorded_by_and_verdict(&run_save(&s, None, &["--recorder", "strace"]));
    let out = run_save(&s, Some(&wrapper), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("the native recorder cannot trace here"))
        .collect();
    assert_eq!(
        notes,
        ["note: recording with strace: the native recorder cannot trace here (installing the seccomp filter: EINVAL (Invalid argument))"],
        "{err}"
    );
    let (by, verdict) = recorded_by_and_verdict(&out);
    assert!(by.starts_with("strace "), "{by}");
    assert_eq!(verdict, expected);
    // Asked for by name, it is refused with the reason, exit 2.
    let out = run_save(&s, Some(&wrapper), &["--recorder", "native"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the native recorder cannot trace here: installing the seccomp filter: EINVAL (Invalid argument); record with --recorder strace"),
        "{err}"
    );
    s.assert_clean();
}
