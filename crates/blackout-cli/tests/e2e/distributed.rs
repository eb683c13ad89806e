//! docs/DISTRIBUTED.md's GitHub Actions workflow: valid YAML (read by
//! python3's yaml module), whose `run:` commands run here in the order the
//! jobs need each other, the matrix values substituted, on the bundled save
//! example: record once, three shards, the merge's verdict.
//!
//! The jobs share one directory, so the artifact steps (`uses:`) have
//! nothing to move, and the checkout is the copy of the example made here;
//! the step that installs strace and blackout is replaced by putting this
//! build where it installs to. `GITHUB_PATH` and `GITHUB_STEP_SUMMARY`
//! work as on a runner, and a failed step skips the rest of its job but
//! the `if: always()` ones.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{examples, repo, text, Scratch};

/// The workflow: the YAML block of docs/DISTRIBUTED.md that starts with
/// its file name.
fn workflow_yaml() -> String {
    let doc = fs::read_to_string(repo().join("docs/DISTRIBUTED.md")).unwrap();
    let start = doc
        .find("```yaml\n# .github/workflows/blackout.yml")
        .expect("the workflow's code block")
        + "```yaml\n".len();
    let len = doc[start..].find("\n```\n").expect("the block's end");
    doc[start..start + len + 1].to_string()
}

/// The YAML as JSON, by python3's yaml module; `None` (outside CI) when it
/// is not installed.
fn parse_yaml(yaml: &str) -> Option<Value> {
    let have = Command::new("python3")
        .args(["-c", "import yaml"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3's yaml module is missing, and CI must run this test (scripts/test installs python3-yaml)"
        );
        eprintln!("note: python3 cannot import yaml; the workflow is not checked");
        return None;
    }
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import sys, json, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), yaml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "not YAML: {}", text(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// A job's steps run here: (step name, exit code) of each step that ran.
struct Runner<'a> {
    s: &'a Scratch,
    dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Runner<'_> {
    fn job(
        &self,
        name: &str,
        job: &Value,
        matrix: Option<(&str, &Value, usize)>,
    ) -> Vec<(String, i32)> {
        let github_path = self.dir.join(format!(".github-path-{name}"));
        let summary = self.dir.join("step-summary.md");
        fs::write(&github_path, "").unwrap();
        let mut ran = Vec::new();
        let mut failed = false;
        for step in job["steps"].as_array().unwrap() {
            let step_name = step["name"].as_str().unwrap_or("").to_string();
            let Some(script) = step["run"].as_str() else {
                continue; // checkout and artifacts: one shared directory here
            };
            if step_name.starts_with("Install") || (failed && step["if"] != "always()") {
                continue;
            }
            let mut script = script.to_string();
            if let Some((key, value, total)) = matrix {
                let value = match value {
                    Value::String(v) => v.clone(),
                    other => other.to_string(),
                };
                script = script
                    .replace(&format!("${{{{ matrix.{key} }}}}"), &value)
                    .replace("${{ strategy.job-total }}", &total.to_string());
            }
            assert!(
                !script.contains("${{"),
                "an expression the test does not know: {script}"
            );
            let added = fs::read_to_string(&github_path).unwrap();
            let mut path: Vec<String> = added.lines().rev().map(String::from).collect();
            path.push(std::env::var("PATH").unwrap());
            let out = Command::new("bash")
                .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
                .current_dir(&self.dir)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .env("PATH", path.join(":"))
                .env("GITHUB_PATH", &github_path)
                .env("GITHUB_STEP_SUMMARY", &summary)
                .env("TMPDIR", self.s.path("tmp"))
                .output()
                .unwrap();
            let code = out.status.code().unwrap_or(-1);
            eprintln!(
                "{name}: {step_name}: exit {code}\n{}{}",
                text(&out.stdout),
                text(&out.stderr)
            );
            failed |= code != 0;
            ran.push((step_name, code));
        }
        ran
    }
}

/// Runs every job of the workflow, each after the jobs it needs, in the
/// directory `dir` with `MODE` set to `mode`: (job, step, exit code).
fn run_workflow(s: &Scratch, wf: &Value, dir: &Path, mode: &str) -> Vec<(String, String, i32)> {
    let mut env: Vec<(String, String)> = wf["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map_or(v.to_string(), String::from)))
        .filter(|(k, _)| k != "MODE")
        .collect();
    env.push(("MODE".into(), mode.into()));
    let runner = Runner {
        s,
        dir: dir.to_path_buf(),
        env,
    };
    let jobs = wf["jobs"].as_object().unwrap();
    let mut done: Vec<String> = Vec::new();
    let mut results = Vec::new();
    while done.len() < jobs.len() {
        let (name, job) = jobs
            .iter()
            .find(|(n, j)| {
                let needs: Vec<&str> = match &j["needs"] {
                    Value::String(one) => vec![one.as_str()],
                    Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
                    _ => Vec::new(),
                };
                !done.contains(n) && needs.iter().all(|x| done.iter().any(|d| d == x))
            })
            .expect("jobs whose needs can be met");
        let matrix = job["strategy"]["matrix"].as_object();
        let runs: Vec<Option<(&str, &Value, usize)>> = match matrix {
            Some(m) => {
                let (key, values) = m.iter().next().unwrap();
                let values = values.as_array().unwrap();
                values
                    .iter()
                    .map(|v| Some((key.as_str(), v, values.len())))
                    .collect()
            }
            None => vec![None],
        };
        for m in runs {
            for (step, code) in runner.job(name, job, m) {
                results.push((name.clone(), step, code));
            }
        }
        done.push(name.clone());
    }
    results
}

#[test]
fn github_actions_shard_matrix_runs_here() {
    let s = Scratch::new();
    let yaml = workflow_yaml();
    let Some(wf) = parse_yaml(&yaml) else { return };
    assert_eq!(wf["jobs"]["shard"]["needs"], "record");
    assert_eq!(wf["jobs"]["merge"]["needs"], "shard");
    assert_eq!(
        wf["jobs"]["shard"]["strategy"]["matrix"]["shard"],
        serde_json::json!([1, 2, 3])
    );
    let blackout = assert_cmd::cargo::cargo_bin("blackout");
    for (mode, want_code, verdict) in [("full", 0, "PASS"), ("no-dir-fsync", 1, "FAIL")] {
        // The checkout: the save example; the install: this build.
        let dir = s.path(mode);
        fs::create_dir_all(dir.join("examples/save")).unwrap();
        fs::create_dir_all(dir.join("blackout-root/bin")).unwrap();
        for f in ["save.sh", "check.sh"] {
            fs::copy(examples().join(f), dir.join("examples/save").join(f)).unwrap();
        }
        fs::copy(&blackout, dir.join("blackout-root/bin/blackout")).unwrap();
        let results = run_workflow(&s, &wf, &dir, mode);
        let step = |name: &str| {
            results
                .iter()
                .filter(|(_, st, _)| st.starts_with(name))
                .map(|(_, _, code)| *code)
                .collect::<Vec<_>>()
        };
        assert_eq!(step("Record"), [0], "{mode}");
        assert_eq!(step("Check shard"), [0, 0, 0], "{mode}");
        assert_eq!(step("Merge"), [want_code], "{mode}");
        assert_eq!(step("Job summary"), [0], "{mode}");
        let parts = fs::read_dir(dir.join("parts")).unwrap().count();
        assert_eq!(parts, 3);
        let summary = fs::read_to_string(dir.join("step-summary.md")).unwrap();
        assert!(
            summary.starts_with(&format!("## blackout: {verdict}")),
            "{mode}: {summary}"
        );
        assert!(dir.join("blackout.xml").exists());
        s.assert_clean();
    }
}
