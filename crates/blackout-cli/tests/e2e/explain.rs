//! End-to-end tests of failure explanations: one small real program per
//! cause kind, each with exactly that bug; the verified fixes on the save
//! example; source lines with `--stacks`; two independent bugs.

use crate::common::{compile, examples, run_json, save_checker, text, Scratch};
use serde_json::Value;

/// A checker: once `saved` was promised, `test` must hold (a shell test);
/// otherwise the state is acceptable if `always` holds.
fn checker(always: &str, after_saved: &str, why: &str) -> String {
    format!(
        "{always} || {{ echo 'inconsistent' >&2; exit 1; }}; \
         if grep -qx saved \"$BLACKOUT_ACKS_FILE\"; then {after_saved} || {{ echo '{why}' >&2; exit 1; }}; fi"
    )
}

/// Runs a workload under `model` and returns the JSON result.
fn run(s: &Scratch, model: &str, setup: &str, checker: &str, workload: &[&str]) -> Value {
    let mut args = vec!["--model", model, "--checker", checker];
    if !setup.is_empty() {
        args.extend(["--setup", setup]);
    }
    args.push("--");
    args.extend(workload);
    let (code, v, out) = run_json(s, &args);
    assert_eq!(code, 1, "expected FAIL: {v}\n{}", text(&out.stderr));
    v
}

fn causes(v: &Value) -> &Vec<Value> {
    v["result"]["models"][0]["causes"].as_array().unwrap()
}

fn kinds(v: &Value) -> Vec<&str> {
    causes(v)
        .iter()
        .map(|c| c["cause"]["kind"].as_str().unwrap())
        .collect()
}

fn sentence(c: &Value) -> &str {
    c["cause"]["sentence"].as_str().unwrap()
}

/// How a cause case's checker judges a state.
enum Check {
    /// `checker(always, after_saved, why)`.
    Shell(&'static str, &'static str, &'static str),
    /// The save example's checker.
    Save,
}

/// What a cause case runs.
enum Workload {
    /// `sh -c SCRIPT`.
    Shell(&'static str),
    /// A C program, compiled with debug info.
    C(&'static str),
    /// The save example in a mode.
    Save(&'static str),
}

/// One real program with exactly one bug, and what blackout must say of it.
struct CauseCase {
    name: &'static str,
    model: &'static str,
    setup: &'static str,
    check: Check,
    workload: Workload,
    /// The only cause's kind.
    kind: &'static str,
    /// Fragments its sentence must contain.
    says: &'static [&'static str],
    /// Whether the verified fix (syncs, or for an update no sync makes
    /// atomic, the file written whole to a new one renamed over it) makes
    /// every state pass (`None`: no fix).
    fix_passes: Option<bool>,
    /// Other fields of the cause group, as JSON pointer → JSON value.
    fields: &'static [(&'static str, &'static str)],
}

/// A 1024-byte record is whole `a`s or whole `b`s.
const RECORD_WHOLE: &str =
    "{ [ \"$(tr -d a < rec | wc -c)\" = 0 ] || [ \"$(tr -d b < rec | wc -c)\" = 0 ]; }";

const SYNC_FILE_RANGE_C: &str = "#define _GNU_SOURCE\n#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n\
     int main(void) {\n\
       int fd = open(\"log\", O_WRONLY | O_APPEND);\n\
       if (write(fd, \"b\\n\", 2) != 2) return 1;\n\
       sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);\n\
       puts(\"saved\");\n\
       return 0;\n\
     }\n";

/// The program fsyncs the wrong descriptor (an O_PATH one: EBADF) and
/// ignores the error.
const FAILED_FSYNC_C: &str =
    "#define _GNU_SOURCE\n#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n\
     int main(void) {\n\
       int fd = open(\"log\", O_WRONLY | O_APPEND);\n\
       if (write(fd, \"b\\n\", 2) != 2) return 1;\n\
       int p = open(\"log\", O_PATH);\n\
       fsync(p);\n\
       puts(\"saved\");\n\
       return 0;\n\
     }\n";

/// One case per cause kind.
const CAUSE_CASES: &[CauseCase] = &[
    CauseCase {
        name: "an entry change without a directory fsync",
        model: "posix",
        setup: "",
        check: Check::Shell(
            "true",
            "[ \"$(cat new.txt 2>/dev/null)\" = hello ]",
            "new.txt lost",
        ),
        workload: Workload::Shell("printf 'hello\\n' > new.txt; sync new.txt; echo saved"),
        kind: "entry_not_synced",
        says: &[
            "create of new.txt (op 0",
            "changed directory ., which is never fsynced before \"saved\" was printed",
        ],
        fix_passes: Some(true),
        fields: &[("/process_passes", "true"), ("/fix/syncs/0/dir", "true")],
    },
    CauseCase {
        name: "data never synced before the promise",
        model: "posix",
        setup: "printf 'a\\n' > log",
        check: Check::Shell("true", "grep -qx b log", "b lost"),
        workload: Workload::Shell("printf 'b\\n' >> log; echo saved"),
        kind: "data_not_synced",
        says: &[
            "the write to log",
            "is never fsynced before \"saved\" was printed",
        ],
        fix_passes: Some(true),
        fields: &[("/fix/syncs/0/path", "\"log\"")],
    },
    CauseCase {
        name: "a promise printed before its sync completed",
        model: "posix",
        setup: "printf 'a\\n' > log",
        check: Check::Shell("true", "grep -qx b log", "b lost"),
        workload: Workload::Shell("printf 'b\\n' >> log; echo saved; sync log"),
        kind: "promise_before_sync",
        says: &["print the promise only after the sync returns"],
        fix_passes: Some(true),
        fields: &[],
    },
    CauseCase {
        name: "a cross-directory rename with one directory synced",
        model: "posix",
        setup: "mkdir a b && echo x > a/f",
        check: Check::Shell("true", "[ -f b/f ] && [ ! -e a/f ]", "f in the wrong place"),
        workload: Workload::Shell("mv a/f b/f; sync b; echo saved"),
        kind: "cross_directory_rename_half_synced",
        says: &["b was fsynced", "but a is not"],
        fix_passes: Some(true),
        fields: &[
            ("/cause/blamed/part", "\"source\""),
            ("/fix/syncs/0/path", "\"a\""),
        ],
    },
    CauseCase {
        // A 1024-byte record rewritten in place and fsynced: before the fsync
        // a crash can tear it between its two sectors, and this "recovery"
        // wants the record whole. No sync can help: the tear happens before.
        name: "a torn last write recovery does not tolerate",
        model: "posix",
        setup: "head -c 1024 /dev/zero | tr '\\0' a > rec",
        check: Check::Shell(
            RECORD_WHOLE,
            "[ \"$(tr -d b < rec | wc -c)\" = 0 ]",
            "old record after saved",
        ),
        workload: Workload::Shell(
            "head -c 1024 /dev/zero | tr '\\0' b 1<> rec; sync rec; echo saved",
        ),
        kind: "torn_tail",
        says: &[
            "no sync can prevent a torn last write",
            "made before any promise",
        ],
        // No sync: the record written whole to a new file renamed over it.
        fix_passes: Some(true),
        fields: &[("/fix/replaced/0/path", "\"rec\"")],
    },
    CauseCase {
        name: "reliance on sync_file_range",
        model: "posix",
        setup: "printf 'a\\n' > log",
        check: Check::Shell("true", "grep -qx b log", "b lost"),
        workload: Workload::C(SYNC_FILE_RANGE_C),
        kind: "sync_file_range_only",
        says: &["sync_file_range", "not a durability barrier"],
        fix_passes: Some(true),
        fields: &[],
    },
    CauseCase {
        name: "reliance on an fsync that failed",
        model: "posix",
        setup: "printf 'a\\n' > log",
        check: Check::Shell("true", "grep -qx b log", "b lost"),
        workload: Workload::C(FAILED_FSYNC_C),
        kind: "failed_sync",
        says: &["failed (EBADF", "went on as if it had succeeded"],
        fix_passes: Some(true),
        fields: &[],
    },
    CauseCase {
        name: "an update that is not atomic",
        model: "process",
        setup: "echo 'version 1' > doc.txt",
        check: Check::Save,
        workload: Workload::Save("in-place"),
        kind: "not_atomic",
        says: &["the update is not atomic"],
        fix_passes: Some(true),
        fields: &[
            ("/fix/replaced/0/path", "\"doc.txt\""),
            ("/fix/syncs", "[]"),
        ],
    },
];

/// Runs one cause case; what it got wrong, if anything.
fn check_cause_case(case: &CauseCase) -> Vec<String> {
    let s = Scratch::new();
    let checker = match case.check {
        Check::Shell(always, after_saved, why) => checker(always, after_saved, why),
        Check::Save => save_checker(),
    };
    let (script, bin);
    let workload: Vec<&str> = match case.workload {
        Workload::Shell(sh) => vec!["sh", "-c", sh],
        Workload::C(src) => {
            bin = compile(&s, "prog", src);
            vec![bin.to_str().unwrap()]
        }
        Workload::Save(mode) => {
            script = examples().join("save.sh");
            vec![script.to_str().unwrap(), mode]
        }
    };
    let v = run(&s, case.model, case.setup, &checker, &workload);
    let mut wrong = Vec::new();
    if kinds(&v) != vec![case.kind] {
        return vec![format!(
            "causes {:?}, expected only {}",
            kinds(&v),
            case.kind
        )];
    }
    let c = &causes(&v)[0];
    for frag in case.says {
        if !sentence(c).contains(frag) {
            wrong.push(format!("sentence lacks `{frag}`: {}", sentence(c)));
        }
    }
    let passes = c["fix"]["passes"].as_bool();
    if passes != case.fix_passes {
        wrong.push(format!(
            "fix passes {passes:?}, expected {:?}",
            case.fix_passes
        ));
    }
    for (pointer, want) in case.fields {
        let want: Value = serde_json::from_str(want).unwrap();
        if c.pointer(pointer) != Some(&want) {
            wrong.push(format!(
                "{pointer} is {:?}, expected {want}",
                c.pointer(pointer)
            ));
        }
    }
    wrong
}

#[test]
fn each_cause_kind_is_named_on_a_real_program() {
    let mut wrong = Vec::new();
    for case in CAUSE_CASES {
        for w in check_cause_case(case) {
            wrong.push(format!("{}: {w}", case.name));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The save example's text report under posix.
fn save_report(s: &Scratch, mode: &str) -> String {
    let script = examples().join("save.sh");
    let out = s
        .blackout()
        .args([
            "run",
            "--model",
            "posix",
            "--setup",
            "echo 'version 1' > doc.txt",
        ])
        .args(["--checker", &save_checker(), "--"])
        .arg(&script)
        .arg(mode)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    s.assert_clean();
    text(&out.stdout)
}

#[test]
fn save_without_directory_fsync_names_the_rename_and_verifies_the_fix() {
    let s = Scratch::new();
    let report = save_report(&s, "no-dir-fsync");
    assert!(report.contains("cause 1 of 1:"), "{report}");
    assert!(
        report.contains("rename of doc.txt.tmp -> doc.txt (op 3, call "),
        "{report}"
    );
    assert!(
        report.contains("changed directory ., which is never fsynced before \"saved\" was printed")
    );
    assert!(report.contains("promise:   \"saved\""));
    assert!(report.contains("process:   the same crash point passes with every op kept"));
    let fix = report
        .lines()
        .find(|l| l.trim_start().starts_with("fix:"))
        .unwrap();
    assert!(fix.contains("adding fsync(.) after op 3 (call "), "{fix}");
    assert!(
        fix.contains("makes all") && fix.contains("states pass under posix"),
        "{fix}"
    );
}

#[test]
fn save_without_any_fsync_verifies_the_file_fsync_before_the_rename() {
    let s = Scratch::new();
    let report = save_report(&s, "no-fsync");
    // Two causes, the one whose simplest state loses "saved" first: the
    // unsynced rename, then the data published unsynced (its window holds
    // crash points before and after "saved").
    assert!(report.contains("cause 1 of 2:"), "{report}");
    let fixes: Vec<&str> = report
        .lines()
        .filter(|l| l.trim_start().starts_with("fix:"))
        .collect();
    assert_eq!(fixes.len(), 2, "{report}");
    assert!(
        fixes[0].contains("adding fsync(.) after op 2 (call "),
        "{}",
        fixes[0]
    );
    let data_fix = fixes[1];
    assert!(
        data_fix.contains("adding fsync(doc.txt.tmp) before op 2 (call "),
        "{data_fix}"
    );
    // It fixes its own cause; the rename can still be lost after "saved",
    // the other cause's states, which the fix for every cause covers.
    assert!(
        data_fix.contains("fixes this cause: makes all ")
            && data_fix.contains("states of the other causes still fail with it alone"),
        "{data_fix}"
    );
    assert!(
        report.contains("fix for every cause: adding fsync(doc.txt.tmp) before op 2"),
        "{report}"
    );
    assert!(report.contains("is not fsynced before the rename that publishes it as doc.txt"));
    // Together they are.
    assert!(
        report.contains("fix for every cause: adding fsync(doc.txt.tmp) before op 2 (call ")
            && report.contains("makes all 6 states pass under posix (each of them is needed)"),
        "{report}"
    );
}

#[test]
fn stacks_name_the_source_line_of_the_blamed_call() {
    let s = Scratch::new();
    let src = "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n\
               static int save(void) {\n\
                 int fd = open(\"doc.txt.tmp\", O_WRONLY | O_CREAT | O_TRUNC, 0644);\n\
                 if (fd < 0 || write(fd, \"version 2\\n\", 10) != 10 || fsync(fd) != 0) return -1;\n\
                 close(fd);\n\
                 return rename(\"doc.txt.tmp\", \"doc.txt\");\n\
               }\n\
               int main(void) {\n\
                 if (save() != 0) return 1;\n\
                 puts(\"saved\");\n\
                 return 0;\n\
               }\n";
    let bin = compile(&s, "csave", src);
    let rename_line = src.lines().position(|l| l.contains("rename(")).unwrap() + 1;
    let out = s
        .blackout()
        .args([
            "run",
            "--stacks",
            "--model",
            "posix",
            "--setup",
            "echo 'version 1' > doc.txt",
        ])
        .args(["--checker", &save_checker(), "--"])
        .arg(&bin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    let lost = report.lines().find(|l| l.contains("lost:")).unwrap();
    let expected = format!("from save at {}:{rename_line}", s.path("csave.c").display());
    assert!(lost.contains(&expected), "{lost} lacks {expected}");
    s.assert_clean();
}

#[test]
fn two_independent_bugs_are_two_causes() {
    let s = Scratch::new();
    // Directory a: the file is fsynced, the directory never is.
    // Directory b: the directory is fsynced, the file never is.
    let script = "printf 'new\\n' > a/doc.tmp; sync a/doc.tmp; mv a/doc.tmp a/doc; \
                  printf 'new\\n' > b/doc.tmp; mv b/doc.tmp b/doc; sync b; echo saved";
    let ok = |d: &str| format!("[ \"$(cat {d}/doc)\" = old ] || [ \"$(cat {d}/doc)\" = new ]");
    let new = "[ \"$(cat a/doc)\" = new ] && [ \"$(cat b/doc)\" = new ]";
    let v = run(
        &s,
        "posix",
        "mkdir a b && echo old > a/doc && echo old > b/doc",
        &checker(
            &format!("{{ {} && {}; }}", ok("a"), ok("b")),
            new,
            "old after saved",
        ),
        &["sh", "-c", script],
    );
    let mut k = kinds(&v);
    k.sort();
    assert_eq!(
        k,
        vec!["data_not_synced_before_rename", "entry_not_synced"],
        "{v:#}"
    );
    let cs = causes(&v);
    let entry = cs
        .iter()
        .find(|c| c["cause"]["kind"] == "entry_not_synced")
        .unwrap();
    assert!(
        sentence(entry).contains("rename of a/doc.tmp -> a/doc"),
        "{entry}"
    );
    assert!(sentence(entry).contains("changed directory a,"));
    let data = cs
        .iter()
        .find(|c| c["cause"]["kind"] != "entry_not_synced")
        .unwrap();
    assert!(sentence(data).contains("b/doc.tmp"), "{data}");
    // Each fix is judged on its own bug, and fixes it; the other bug
    // remains with it alone.
    for c in cs {
        let f = &c["fix"];
        assert_eq!(f["passes"], true, "{c}");
        assert_eq!(f["own"]["still_failing"], 0, "{c}");
        assert!(f["still_failing"].as_u64().unwrap() > 0, "{c}");
    }
    assert_eq!(
        v["result"]["models"][0]["fix_set"]["result"], "found",
        "{v:#}"
    );
}

#[test]
fn with_stacks_one_bug_at_one_source_line_is_one_cause_fixed_everywhere() {
    let s = Scratch::new();
    // The same bug three times, from one line: each record is acknowledged
    // before it is fsynced.
    let src = "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n\
               int main(void) {\n\
                 int fd = open(\"log\", O_WRONLY | O_APPEND);\n\
                 for (int i = 1; i <= 3; i++) {\n\
                   char rec[8];\n\
                   int n = snprintf(rec, sizeof rec, \"r%d\\n\", i);\n\
                   if (write(fd, rec, n) != n) return 1;\n\
                   printf(\"ack %d\\n\", i);\n\
                   fflush(stdout);\n\
                   fsync(fd);\n\
                 }\n\
                 return 0;\n\
               }\n";
    let bin = compile(&s, "acks", src);
    let write_line = src.lines().position(|l| l.contains("write(fd")).unwrap() + 1;
    let checker = "for n in $BLACKOUT_ACKED; do case $n in [0-9]) \
                   grep -qx \"r$n\" log || { echo \"record $n lost\" >&2; exit 1; };; esac; done";
    let (code, v, _) = run_json(
        &s,
        &[
            "--stacks",
            "--model",
            "posix",
            "--setup",
            ": > log",
            "--checker",
            checker,
            "--",
            bin.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{v}");
    let cs = causes(&v);
    assert_eq!(cs.len(), 1, "{v:#}");
    let source = format!("{}:{write_line}", s.path("acks.c").display());
    assert_eq!(cs[0]["source"], source.as_str());
    assert_eq!(cs[0]["fix"]["syncs"].as_array().unwrap().len(), 3);
    assert_eq!(cs[0]["fix"]["passes"], true, "{:#}", cs[0]["fix"]);
    assert!(cs[0]["fix"]["description"]
        .as_str()
        .unwrap()
        .contains(&format!("after each of the 3 ops issued at {source}")));
}
