//! Representative exploration loses nothing on the planted-bug table: with
//! one crash point per class (the fewest there can be), every bug's run
//! finds the same verdict under every model, the same cause kinds and the
//! same blamed ops as the run that explores every crash point — while it
//! explores fewer (the representatives alone: no check budget for the
//! rest).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use blackout::analysis::report::RunReport;
use blackout::explore::enumerate::Representatives;
use blackout::explore::model::Model;
use blackout::run::check_trace;
use common::{bugs, recorded};

const MODELS: [Model; 3] = [Model::Process, Model::Ordered, Model::Posix];

/// A model's name, its verdict, and each cause's kind and blamed op.
type Findings = (String, String, BTreeSet<(String, String)>);

/// Per model: the verdict, and each cause's kind and blamed op (syscall
/// and path, as the report names it).
fn findings(r: &RunReport) -> Vec<Findings> {
    r.models
        .iter()
        .map(|m| {
            let causes = m
                .causes
                .iter()
                .map(|g| (format!("{:?}", g.cause.kind), g.cause.op.clone()))
                .collect();
            (
                m.model.name().to_string(),
                m.verdict.name().to_string(),
                causes,
            )
        })
        .collect()
}

#[test]
fn one_representative_per_class_finds_what_every_crash_point_finds() {
    for (bug, _) in bugs() {
        let bug = bug.as_str();
        let (trace, mut cfg) = recorded(bug, &MODELS);
        cfg.fix_verifications = 0;
        cfg.explore.representatives = Representatives::Exhaustive;
        let every = check_trace(&trace, &cfg).expect("checking kvstore");
        cfg.explore.representatives = Representatives::PerClass(1);
        // The representatives alone, not the rest the budget would check.
        cfg.check_budget = Some(Duration::ZERO);
        let some = check_trace(&trace, &cfg).expect("checking kvstore");
        assert_eq!(findings(&some), findings(&every), "bug {bug}");
        let explored = |r: &RunReport| r.models[0].coverage.crash_points;
        assert!(
            explored(&some) < explored(&every),
            "bug {bug}: {} of {} crash points",
            explored(&some),
            explored(&every)
        );
        let classes = some.models[0].coverage.classes.as_ref().expect("classes");
        let stood_for: usize = classes.iter().map(|c| c.crash_points).sum();
        assert_eq!(
            stood_for,
            explored(&every),
            "bug {bug}: every crash point in a class"
        );
    }
}
