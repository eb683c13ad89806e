//! What the kvstore tests that record the store share: the binary, its
//! planted bugs, and one bug's recording with the store's own checker.

use std::process::Command;
use std::time::Duration;

use blackout::check::shell::ShellChecker;
use blackout::explore::model::Model;
use blackout::oplog::trace::Trace;
use blackout::record::{RecordConfig, Recorder, StraceRecorder};
use blackout::run::RunConfig;

pub fn kvstore() -> &'static str {
    env!("CARGO_BIN_EXE_kvstore")
}

/// (name, description) of every bug, from `kvstore bugs`.
pub fn bugs() -> Vec<(String, String)> {
    let out = Command::new(kvstore()).arg("bugs").output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, d) = l.split_once(' ').unwrap();
            (n.to_string(), d.trim().to_string())
        })
        .collect()
}

/// `kvstore [--bug BUG] load 8` recorded (`none`: the store without bugs),
/// and a config checking it under `models` with `kvstore [--bug BUG]
/// check`.
pub fn recorded(bug: &str, models: &[Model]) -> (Trace, RunConfig) {
    let flags: Vec<String> = if bug == "none" {
        Vec::new()
    } else {
        vec!["--bug".into(), bug.into()]
    };
    let mut command: Vec<std::ffi::OsString> = vec![kvstore().into()];
    command.extend(flags.iter().map(Into::into));
    command.extend(["load".into(), "8".into()]);
    let rec = StraceRecorder::default()
        .record(&RecordConfig::new(command))
        .expect("recording kvstore");
    let mut checker = kvstore().to_string();
    for f in &flags {
        checker.push(' ');
        checker.push_str(f);
    }
    checker.push_str(" check");
    let mut cfg = RunConfig::with_checker(Box::new(ShellChecker {
        command: checker,
        timeout: Duration::from_secs(60),
    }));
    cfg.models = models.to_vec();
    (rec.trace, cfg)
}
