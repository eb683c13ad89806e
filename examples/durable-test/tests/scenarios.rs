//! Durability assertions inside `cargo test`, one scenario per store.

use std::path::Path;

use blackout::analysis::explain::CauseKind;
use blackout::analysis::report::{CauseGroup, Verdict};
use blackout::{Report, Scenario};
use durable_test::{atomic_replace, create_without_dir_sync, holds, LogStore};

mod common;

/// The cause of `kind` blamed on an op described as `op`; the report if
/// there is none.
fn cause<'a>(report: &'a Report, kind: CauseKind, op: &str) -> &'a CauseGroup {
    report
        .causes()
        .into_iter()
        .find(|c| c.cause.kind == kind && c.cause.op.contains(op))
        .unwrap_or_else(|| panic!("no {kind:?} cause on `{op}`:\n{}", report.text()))
}

/// Asserts that only posix fails, and that `c`'s fix, an fsync of `path`,
/// was verified to make every state pass.
fn fails_under_posix_only_and_fix_passes(report: &Report, c: &CauseGroup, path: &str) {
    assert_eq!(report.verdict(), Verdict::Fail, "{}", report.text());
    let verdicts: Vec<_> = report.models().iter().map(|m| m.verdict).collect();
    assert_eq!(
        verdicts,
        [Verdict::Pass, Verdict::Pass, Verdict::Fail],
        "{}",
        report.text()
    );
    let fix = c.fix.as_ref().expect("a verified fix");
    assert!(fix.passes, "{}", report.text());
    assert!(
        fix.description.contains(&format!("fsync({path})")),
        "{}",
        fix.description
    );
    assert!(report.text().contains(&fix.description));
}

#[test]
fn atomic_replace_passes() {
    let report = common::replace_scenario();
    report.assert_pass();
    assert_eq!(report.run_report().unwrap().promises, ["saved v2"]);
    assert_eq!(report.models().len(), 3);
}

#[test]
fn both_syncs_of_an_atomic_replace_are_needed() {
    let report = common::replace(Scenario::new("atomic replace, syncs judged"))
        .syncs(true)
        .models([blackout::explore::model::Model::Posix])
        .run();
    report.assert_pass();
    let syncs = report.syncs().unwrap();
    assert_eq!(syncs.sites.len(), 2, "{}", report.text());
    // With stacks, a site is its source line.
    report.assert_sync_needed("atomic_replace at ");
    report.assert_sync_needed("sync_dir at ");
    assert_eq!(syncs.mutation(), (2, 2), "{}", report.text());
}

#[test]
#[should_panic(
    expected = "scenario `fails`: the workload failed: blackout: the workload returned an error: disk on fire"
)]
fn a_failing_workload_fails_the_test_saying_why() {
    Scenario::new("fails")
        .workload(|_, _| Err("disk on fire".into()))
        .check(|_, _| Ok::<(), String>(()))
        .run();
}

#[test]
fn a_create_without_a_directory_fsync_fails() {
    let report = common::create_scenario();
    let c = cause(&report, CauseKind::EntryNotSynced, "create data");
    assert!(
        c.cause.sentence.contains("never fsynced"),
        "{}",
        c.cause.sentence
    );
    fails_under_posix_only_and_fix_passes(&report, c, ".");
    // A closure is not a command: the reproduce line only writes the state.
    let line = format!(
        "reproduce: keep the trace with .keep_trace(\"run.trace\"), then: blackout state run.trace {id} state-{id}\n",
        id = c.simplest.id
    );
    assert!(report.text().contains(&line), "{}", report.text());
}

#[test]
fn folding_the_log_into_an_unsynced_base_fails() {
    let kept =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fold-{}.trace", std::process::id()));
    let report = Scenario::new("fold")
        .keep_trace(&kept)
        .workload(|dir, p| {
            let store = LogStore::open(dir)?;
            store.set("k", "v1")?;
            p.promise("k=v1");
            store.close()?;
            Ok(())
        })
        .check(|state, promised| {
            let got = LogStore::at(state).read_all().map_err(|e| e.to_string())?;
            for p in promised {
                let (k, v) = p.split_once('=').ok_or("bad promise")?;
                if got.get(k).map(String::as_str) != Some(v) {
                    return Err(format!("promised {p}, found {:?}", got.get(k)));
                }
            }
            Ok(())
        })
        .run();
    let c = cause(&report, CauseKind::DataNotSynced, "to base");
    assert!(
        c.cause.sentence.contains("the write to base")
            && c.cause.sentence.contains("never fsynced"),
        "{}",
        c.cause.sentence
    );
    fails_under_posix_only_and_fix_passes(&report, c, "base");
    // The report names the cause as `blackout run` does.
    assert!(report
        .text()
        .contains("is never fsynced before \"k=v1\" was printed"));
    let json: serde_json::Value = serde_json::from_str(report.json()).unwrap();
    assert_eq!(json["verdict"], "FAIL");
    // The source line of the write, or why there is none.
    let text = report.text();
    assert!(
        (c.source.is_some() && text.contains("source:    "))
            || text.contains("note: a cause without a source line"),
        "{text}"
    );
    // The kept trace is what the reproduce line names.
    let line = format!(
        "reproduce: blackout state {} {id} state-{id} --trace-id",
        kept.display(),
        id = c.simplest.id
    );
    assert!(report.text().contains(&line), "{}", report.text());
    assert!(std::fs::metadata(&kept).unwrap().len() > 0);
    std::fs::remove_file(&kept).unwrap();
}

#[test]
fn the_refusals_of_the_command_line_hold() {
    let save = |dir: &Path, p: &blackout::Promises| -> blackout::scenario::WorkloadResult {
        atomic_replace(dir, "doc", b"v2")?;
        p.promise("saved v2");
        Ok(())
    };
    let nothing_promised = Scenario::new("nothing promised")
        .workload(|dir, _| Ok(atomic_replace(dir, "doc", b"v2")?))
        .check(|state, promised| holds(state, promised, "saved v2", "doc", "v2"))
        .run();
    // Several scenarios in one test: all run before any report is looked at.
    let accepts_all = Scenario::new("accepts everything")
        .workload(save)
        .check(|_, _| Ok::<(), String>(()))
        .run();
    let rejects_all = Scenario::new("rejects everything")
        .workload(save)
        .check(|_, _| Err("never"))
        .run();
    assert_eq!(nothing_promised.verdict(), Verdict::Inconclusive);
    assert_eq!(accepts_all.verdict(), Verdict::Inconclusive);
    assert_eq!(rejects_all.verdict(), Verdict::HarnessBroken);
}

#[test]
fn a_panicking_check_rejects_with_its_message() {
    let report = Scenario::new("panics")
        .workload(|dir, p| {
            create_without_dir_sync(dir, "data", b"hello")?;
            p.promise("created data");
            Ok(())
        })
        .check(|state, promised| {
            if !promised.is_empty() {
                let text = std::fs::read_to_string(state.join("data")).unwrap();
                assert_eq!(text, "hello", "data holds the wrong text");
            }
            Ok::<(), String>(())
        })
        .run();
    assert_eq!(report.verdict(), Verdict::Fail, "{}", report.text());
    let c = cause(&report, CauseKind::EntryNotSynced, "create data");
    assert!(
        c.simplest.outcome.describe().contains("No such file"),
        "{}",
        report.text()
    );
}

#[test]
#[should_panic(expected = "scenario `no strace`: cannot record the workload: cannot run strace")]
fn without_strace_the_test_fails_saying_so() {
    Scenario::new("no strace")
        .strace("/nonexistent/strace")
        .workload(|_, _| Ok(()))
        .check(|_, _| Ok::<(), String>(()))
        .run();
}

#[test]
#[should_panic(expected = "the workload panicked: blackout: an empty promise promises nothing")]
fn an_empty_promise_is_refused() {
    Scenario::new("empty promise")
        .workload(|_, p| {
            p.promise("");
            Ok(())
        })
        .check(|_, _| Ok::<(), String>(()))
        .run();
}
