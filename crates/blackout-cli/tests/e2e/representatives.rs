//! Representative exploration loses nothing on the repository's examples:
//! on every example program (the document save, the small engines, the
//! kvstore bugs; the SQLite workload in every journal mode and level is
//! the SQLite matrix's own comparison), a run with one crash point per
//! class, and one of each set of alike pending ops at each, gives the same
//! posix verdict, cause kinds and blamed ops as a run over every crash
//! point of the same trace. The exhaustive run shows states the default
//! way (the FUSE view where it can be mounted), the representatives' run
//! writes them out as directories: the findings do not depend on it.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::block::{every_example, example_inputs};
use crate::common::{run_json, text, Scratch};

/// The verdict, and each cause's kind and blamed op.
fn findings(v: &Value) -> (String, BTreeSet<(String, String)>) {
    let model = &v["result"]["models"][0];
    let causes = model["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|g| {
                    let s = |k: &str| g[k].as_str().unwrap_or_default().to_string();
                    (s("kind"), s("op"))
                })
                .collect()
        })
        .unwrap_or_default();
    (
        v["verdict"].as_str().unwrap_or_default().to_string(),
        causes,
    )
}

#[test]
fn one_representative_per_class_finds_what_every_crash_point_finds_on_every_example() {
    if !crate::common::have_tool("sqlite3") {
        return;
    }
    let (refs, kvstore) = example_inputs();
    let (mut compared, mut failing) = (0, 0);
    let examples = every_example(&refs.path(""), &kvstore);
    for ex in examples.iter().filter(|e| !e.name.starts_with("sqlite")) {
        let s = Scratch::new();
        let trace = s.path("t.trace");
        let trace = trace.to_str().unwrap();
        // As the SQLite matrix runs posix: 16 sampled subsets beyond the
        // exhaustive limit.
        let posix = ["--model", "posix", "--verify-fixes", "0", "--budget", "16"];
        let mut args: Vec<&str> = posix.to_vec();
        args.extend(["--exhaustive", "-o", trace]);
        // Every state through the FUSE view; the representatives below
        // written out as directories.
        args.extend(["--materializer", crate::common::view_or_dir()]);
        if !ex.setup.is_empty() {
            args.extend(["--setup", &ex.setup]);
        }
        args.extend(ex.flags.iter().map(String::as_str));
        args.extend(["--checker", &ex.checker, "--", "sh", "-c", &ex.workload]);
        let (code, every, out) = run_json(&s, &args);
        assert!(code <= 1, "{}: exit {code}: {}", ex.name, text(&out.stderr));
        let mut again = vec!["--trace", trace];
        again.extend(posix);
        again.extend(["--representatives", "1", "--materializer", "dir"]);
        // The promise prefix is the run's, not the trace's.
        if let Some(i) = ex.flags.iter().position(|f| f == "--ack-prefix") {
            again.extend(["--ack-prefix", &ex.flags[i + 1]]);
        }
        again.extend(["--checker", &ex.checker]);
        let (code, some, out) = run_json(&s, &again);
        assert!(code <= 1, "{}: exit {code}: {}", ex.name, text(&out.stderr));
        assert_eq!(findings(&some), findings(&every), "{}", ex.name);
        let classes = &some["result"]["models"][0]["coverage"]["classes"];
        assert!(classes.is_array(), "{}: not by representatives", ex.name);
        let explored = |v: &Value| v["result"]["models"][0]["coverage"]["crash_points"].as_u64();
        assert!(
            explored(&some) <= explored(&every),
            "{}: {:?} of {:?}",
            ex.name,
            explored(&some),
            explored(&every)
        );
        compared += 1;
        failing += usize::from(code == 1);
    }
    assert!(
        compared >= 15 && failing >= 10,
        "{compared} examples, {failing} failing"
    );
}
