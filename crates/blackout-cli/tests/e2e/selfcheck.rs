//! blackout passes blackout: the files it keeps for its users (a baseline, a
//! shard part) survive a power cut, checked by recording blackout itself
//! writing them over older ones; a trace, part or baseline cut short is
//! refused in one line, never read as a shorter file.

use std::fs;
use std::path::Path;

use blackout::oplog::ops::OpKind;
use blackout::oplog::trace::Trace;

use crate::common::{repo, save_checker, text, Scratch};

/// A shard part's `trace_id`.
fn part_trace_id(path: &Path) -> String {
    let v: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    v["trace_id"].as_str().unwrap().to_string()
}

/// Writes, in `dir`, a baseline (case `save`) and a shard part of the save
/// example's recording `mode`, as `blackout run` writes them.
fn baseline_and_part(s: &Scratch, mode: &str, tsv: &Path, part: &Path) {
    let trace = repo().join(format!("tests/reports/save-{mode}.trace"));
    let out = s
        .blackout()
        .env("BLACKOUT_UPDATE_BASELINE", "1")
        .env_remove("CI")
        .arg("run")
        .arg("--trace")
        .arg(&trace)
        .args(["--checker", &save_checker(), "--case", "save", "--baseline"])
        .arg(tsv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = s
        .blackout()
        .arg("run")
        .arg("--trace")
        .arg(&trace)
        .args(["--checker", &save_checker(), "--shard", "1/1", "--part"])
        .arg(part)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// `blackout run --model posix` of `trace` with the self-check's checker.
fn check(s: &Scratch, trace: &Path) -> std::process::Output {
    let out = s
        .blackout()
        .arg("run")
        .arg("--trace")
        .arg(trace)
        .args(["--model", "posix", "--checker"])
        .arg(format!("sh {}", s.path("check.sh").display()))
        .output()
        .unwrap();
    s.assert_clean();
    out
}

#[test]
fn blackout_s_baseline_and_part_survive_a_power_cut_and_not_without_their_syncs() {
    let s = Scratch::new();
    // The old files (from the variant that fails under posix) and, made
    // the same way, the new ones the recorded run will write.
    let (old_tsv, old_part) = (s.path("old.tsv"), s.path("old.json"));
    let (new_tsv, new_part) = (s.path("new.tsv"), s.path("new.json"));
    baseline_and_part(&s, "no-dir-fsync", &old_tsv, &old_part);
    baseline_and_part(&s, "full", &new_tsv, &new_part);
    let (old_id, new_id) = (part_trace_id(&old_part), part_trace_id(&new_part));
    assert_ne!(old_id, new_id);
    assert_ne!(fs::read(&old_tsv).unwrap(), fs::read(&new_tsv).unwrap());

    let blackout = assert_cmd::cargo::cargo_bin("blackout");
    let full = repo().join("tests/reports/save-full.trace");
    let run = format!(
        "{} run --trace {} --checker '{}'",
        blackout.display(),
        full.display(),
        save_checker()
    );
    fs::write(
        s.path("work.sh"),
        format!(
            "set -e\n\
             BLACKOUT_UPDATE_BASELINE=1 {run} --case save --baseline b.tsv >/dev/null 2>&1\n\
             echo 'saved baseline'\n\
             {run} --shard 1/1 --part p.json >/dev/null 2>&1\n\
             echo 'saved part'\n"
        ),
    )
    .unwrap();
    // The old file or the new one, whole; the new one once its run said so.
    fs::write(
        s.path("check.sh"),
        format!(
            r#"fail() {{ echo "$1" >&2; exit 1; }}
if cmp -s b.tsv {old_tsv}; then b=old; elif cmp -s b.tsv {new_tsv}; then b=new
else fail "b.tsv is neither the old baseline nor the new one, whole"; fi
id=$(python3 -c 'import json; p = json.load(open("p.json")); assert p["format"] == "blackout-part"; print(p["trace_id"])' 2>/dev/null) \
  || fail "p.json is not a whole part file"
case "$id" in {old_id}) p=old;; {new_id}) p=new;; *) fail "p.json is a part of another trace";; esac
case "$BLACKOUT_ACKED" in *"saved baseline"*) [ $b = new ] || fail "'saved baseline' was printed, b.tsv is the old one";; esac
case "$BLACKOUT_ACKED" in *"saved part"*) [ $p = new ] || fail "'saved part' was printed, p.json is the old one";; esac
exit 0
"#,
            old_tsv = old_tsv.display(),
            new_tsv = new_tsv.display(),
        ),
    )
    .unwrap();

    let trace = s.path("self.trace");
    let out = s
        .blackout()
        .env_remove("CI") // a developer's update: CI never rewrites a baseline
        .args(["record", "-o"])
        .arg(&trace)
        .arg("--setup")
        .arg(format!(
            "cp {} b.tsv && cp {} p.json",
            old_tsv.display(),
            old_part.display()
        ))
        .args(["--", "sh"])
        .arg(s.path("work.sh"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    s.assert_clean();

    let out = check(&s, &trace);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("PASS"), "{}", text(&out.stdout));

    // The same run with blackout's syncs taken out: the renamed files can
    // be empty and the renames lost after blackout said it saved them.
    let t = Trace::load(&trace).unwrap();
    let syncs: Vec<usize> = (0..t.ops.len())
        .filter(|&i| matches!(t.ops[i].kind, OpKind::Fsync { .. }))
        .collect();
    // Each file: its own fsync before the rename, its directory's after.
    assert_eq!(syncs.len(), 4, "{}", t.op_log_text());
    let stripped = s.path("stripped.trace");
    blackout::analysis::explain::without_syncs(&t, &syncs)
        .save(&stripped)
        .unwrap();
    let out = check(&s, &stripped);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let report = text(&out.stdout);
    assert!(report.contains("FAIL"), "{report}");
    assert!(report.contains("b.tsv"), "{report}");
}

/// Runs `args` and asserts one error line saying the file was cut short,
/// and exit code 2.
fn refused_as_cut(s: &Scratch, args: &[&Path]) {
    let out = s.blackout().args(args).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains("cut short"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_trace_or_a_part_cut_short_is_one_error_line_and_exit_2() {
    let s = Scratch::new();
    let (tsv, part) = (s.path("b.tsv"), s.path("p.json"));
    baseline_and_part(&s, "full", &tsv, &part);
    let trace = fs::read(repo().join("tests/reports/save-full.trace")).unwrap();
    let header_end = trace.iter().position(|&b| b == b'\n').unwrap();
    let cut = s.path("cut.trace");
    // Inside the first line, inside the header, inside the data.
    for len in [5, header_end + 10, trace.len() - 1] {
        fs::write(&cut, &trace[..len]).unwrap();
        refused_as_cut(&s, &[Path::new("ops"), &cut]);
    }
    let bytes = fs::read(&part).unwrap();
    let cut = s.path("cut.json");
    for len in [0, bytes.len() / 2, bytes.len() - 2] {
        fs::write(&cut, &bytes[..len]).unwrap();
        refused_as_cut(&s, &[Path::new("merge"), &cut]);
    }
}

/// The check of a trace saved over an older one: `run.trace` is the old
/// trace or the new one, whole; the new one once "saved trace" was
/// promised.
fn trace_check(old_id: String, new_id: String) -> impl Fn(&Path, &[String]) -> Result<(), String> {
    move |dir, promised| {
        let t = Trace::load(&dir.join("run.trace")).map_err(|e| format!("run.trace: {e}"))?;
        let id = t.content_id();
        let new = if id == new_id {
            true
        } else if id == old_id {
            false
        } else {
            return Err(format!("run.trace is neither trace ({id})"));
        };
        if promised.iter().any(|p| p == "saved trace") && !new {
            return Err("\"saved trace\" was promised, run.trace is the old one".into());
        }
        Ok(())
    }
}

#[test]
fn a_trace_saved_over_an_older_one_survives_a_power_cut_and_not_without_its_syncs() {
    use blackout::explore::model::Model;
    let reports = repo().join("tests/reports");
    let (old_path, new_path) = (
        reports.join("save-no-dir-fsync.trace"),
        reports.join("save-full.trace"),
    );
    let old_id = Trace::load(&old_path).unwrap().content_id();
    let new_id = Trace::load(&new_path).unwrap().content_id();
    let report = blackout::Scenario::new("trace saved")
        .models([Model::Posix])
        .setup(move |dir| {
            Trace::load(&old_path)?.save(&dir.join("run.trace"))?;
            Ok(())
        })
        .workload(move |dir, p| {
            Trace::load(&new_path)?.save(&dir.join("run.trace"))?;
            p.promise("saved trace");
            Ok(())
        })
        .check({
            let check = trace_check(old_id.clone(), new_id.clone());
            move |dir: &Path, promised: &[String]| check(dir, promised)
        })
        .run();
    report.assert_pass();

    let trace = report.trace().unwrap();
    let syncs: Vec<usize> = (0..trace.ops.len())
        .filter(|&i| matches!(trace.ops[i].kind, OpKind::Fsync { .. }))
        .collect();
    assert_eq!(syncs.len(), 2, "{}", trace.op_log_text());
    let stripped = blackout::analysis::explain::without_syncs(trace, &syncs);
    let checker = blackout::check::closure::ClosureChecker::new(
        "the trace check",
        trace_check(old_id, new_id),
    );
    let mut cfg = blackout::run::RunConfig::with_checker(Box::new(checker));
    cfg.models = vec![Model::Posix];
    let report = blackout::run::check_trace(&stripped, &cfg).unwrap();
    assert_eq!(
        report.final_verdict(),
        blackout::analysis::report::Verdict::Fail
    );
}
