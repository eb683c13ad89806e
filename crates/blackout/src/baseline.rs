//! The ratchet on durability verdicts for CI: the rules, the baseline
//! file and the comparison are analysis's
//! ([`blackout_analysis::baseline`], re-exported here), the ratchet on
//! scenario reports is beside the reports ([`assert_no_worse_than`],
//! [`check_reports`], re-exported from the export crate); this module
//! hands it the rows of one run of the command line ([`check_run`]).

use std::path::Path;

use blackout_analysis::report::RunReport;

pub use blackout_analysis::baseline::{
    case_of_run, compare, ratchet, Baseline, BaselineError, Comparison, Mode, Ratchet, Row, Rule,
    Scope, Violation, BLOCK_MODEL, END_LINE, NO_MODEL, UPDATE_ENV,
};

pub use blackout_export::scenario::{assert_no_worse_than, check_reports};

/// The ratchet on one run of the command line: its rows under `case`
/// compared with the baseline at `path` ([`Scope::Given`]: only that
/// case's rows), or written into it, replacing only that case's rows.
///
/// ```no_run
/// use blackout::analysis::report::RunReport;
/// use blackout::baseline::{check_run, Mode};
/// # let report: RunReport = unimplemented!();
/// let done = check_run("durability.tsv".as_ref(), "save", &report, Mode::from_env()).unwrap();
/// ```
pub fn check_run(
    path: &Path,
    case: &str,
    report: &RunReport,
    mode: Mode,
) -> Result<Ratchet, BaselineError> {
    ratchet(path, &Row::of_run(case, report), Scope::Given, mode)
}

#[cfg(test)]
mod tests {
    use blackout_analysis::report::Verdict;
    use blackout_explore::model::Model;

    use super::*;

    const NONE: [&str; 0] = [];

    fn row(case: &str, model: &str, verdict: Verdict, kinds: &[&str]) -> Row {
        Row::new(case, model, verdict, kinds.iter().copied())
    }

    #[test]
    fn a_block_runs_file_system_has_a_row_with_the_posix_cause_kinds_it_was_blamed_on() {
        use blackout_analysis::block::{Blame, BlockChecked, BlockReport, BlockSide};
        use blackout_oplog::outcome::Outcome;
        // A new file written and "saved" without any fsync: posix fails.
        let t = blackout_record::replay::trace_of_log(
            b"1 openat(AT_FDCWD, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3\n\
              1 write(3, \"\\x68\\x69\", 2) = 2\n\
              1 write(1, \"\\x73\\x61\\x76\\x65\\x64\\x0a\", 6) = 6\n",
            b"/d",
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = crate::run::RunConfig::new(
            r#"! grep -qx saved "$BLACKOUT_ACKS_FILE" || [ "$(cat a 2>/dev/null)" = hi ]"#,
        );
        cfg.models = vec![Model::Posix];
        cfg.fix_verifications = 0;
        cfg.handles.scratch_parent = Some(dir.path().to_path_buf());
        let mut report = crate::run::check_trace(&t, &cfg).unwrap();
        let causes = &report.models[0].causes;
        assert!(!causes.is_empty(), "{report:#?}");
        let blamed = causes.last().unwrap().cause.kind.name();
        let failing = |cause: Option<usize>| BlockChecked {
            id: "b1".into(),
            point: 0,
            lost: Vec::new(),
            promises: Vec::new(),
            states: 1,
            outcome: Outcome::Fail {
                status: "exit code 1".into(),
                reason: "lost".into(),
            },
            blame: Some(Blame {
                posix_cause: cause.map(|n| (n, String::new())),
                ..Blame::default()
            }),
        };
        // One state blamed on the last posix cause, one on none (a cause
        // number past the report's counts as none).
        let block = BlockReport {
            fs: "ext4".into(),
            verdict: Verdict::Fail,
            reason: String::new(),
            points: Vec::new(),
            states: 2,
            states_checked: 2,
            exact: true,
            distinct: 2,
            failing: vec![failing(Some(causes.len())), failing(Some(causes.len() + 1))],
            errors: Vec::new(),
            subsets_left_out: "0".into(),
            deepest_window: 1,
            posix_misses: Vec::new(),
            seconds: 0.0,
            states_per_second: 0.0,
            time: Default::default(),
            fsck: None,
        };
        report.block = Some(BlockSide {
            fs: "ext4".into(),
            report: Some(block),
            repeat: Vec::new(),
        });
        let rows = Row::of_run("save", &report);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], row("save", "block:ext4", Verdict::Fail, &[blamed]));
        // Not checked: the posix run's verdict stands for the file system.
        report.block.as_mut().unwrap().report = None;
        let rows = Row::of_run("save", &report);
        assert_eq!(rows[1], row("save", "block:ext4", report.verdict, &NONE));
        // Stopped before exploring: one `-` row stands for every model.
        report.models.clear();
        assert_eq!(Row::of_run("save", &report)[0].model, NO_MODEL);
        assert_eq!(Row::of_run("save", &report).len(), 1);
    }
}
