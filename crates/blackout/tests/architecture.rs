//! The house rules, enforced: data flows one way between the stage crates,
//! and one way between the modules inside each crate.
//!
//! Crate edges are read from each crate's `Cargo.toml` and from the
//! `blackout_*` paths its library code names; module edges from the
//! `crate::MODULE` paths each module names outside its tests. An edge not
//! in the allow-list below fails the test, naming the file and the edge.
//! ARCHITECTURE.md states the same rules in words.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each crate, in pipeline order, with the crates its library may use.
/// Everything a crate may use comes before it in this list.
const CRATES: &[(&str, &[&str])] = &[
    ("blackout-sys", &[]),
    ("blackout-oplog", &["blackout-sys"]),
    ("blackout-block", &["blackout-sys"]),
    ("blackout-record", &["blackout-oplog", "blackout-sys"]),
    ("blackout-explore", &["blackout-oplog"]),
    (
        "blackout-check",
        &[
            "blackout-oplog",
            "blackout-sys",
            "blackout-block",
            "blackout-explore",
        ],
    ),
    ("blackout-live", &["blackout-oplog", "blackout-sys"]),
    (
        "blackout-analysis",
        &["blackout-sys", "blackout-oplog", "blackout-explore"],
    ),
    (
        "blackout-export",
        &["blackout-oplog", "blackout-explore", "blackout-analysis"],
    ),
    (
        "blackout",
        &[
            "blackout-oplog",
            "blackout-sys",
            "blackout-block",
            "blackout-record",
            "blackout-explore",
            "blackout-check",
            "blackout-live",
            "blackout-analysis",
            "blackout-export",
        ],
    ),
    ("blackout-cli", &["blackout"]),
];

/// Crates whose tests may record fixtures with the recorder (a dev-only
/// edge: their library code still may not use it).
const DEV_EDGES: &[(&str, &str)] = &[
    ("blackout-explore", "blackout-record"),
    ("blackout-analysis", "blackout-record"),
    ("blackout", "blackout-record"),
];

/// Each crate's modules, lowest first: a module may name only modules
/// before it (and the crate root, where the seams are declared).
const MODULES: &[(&str, &[&str])] = &[
    (
        "blackout-oplog",
        &[
            "origin", "ops", "tear", "blob", "contents", "tree", "store", "trace", "promises",
            "naming", "outcome", "protocol",
        ],
    ),
    (
        "blackout-sys",
        &[
            "command", "durable", "proc", "isolate", "memory", "scratch", "fuse",
        ],
    ),
    (
        "blackout-block",
        &[
            "log",
            "crash",
            "image",
            "states",
            "recording",
            "daemon",
            "session",
            "mount",
        ],
    ),
    (
        "blackout-record",
        &[
            "error", "syscall", "fsmodel", "strace", "times", "stacks", "decode", "snapshot",
            "omit", "replay", "record", "native", "scenario",
        ],
    ),
    (
        "blackout-explore",
        &[
            "enumerate",
            "model",
            "state",
            "keys",
            "classes",
            "dedup",
            "rest",
        ],
    ),
    (
        "blackout-check",
        &[
            "outcome",
            "view",
            "forked",
            "materialize",
            "slot",
            "shell",
            "closure",
            "server",
            "workers",
            "pool",
            "image",
            "saved",
            "shard",
        ],
    ),
    (
        "blackout-live",
        &[
            "pending", "faults", "limits", "tree", "durable", "state", "fs", "mount", "control",
            "soak", "cluster",
        ],
    ),
    (
        "blackout-analysis",
        &[
            "verdict",
            "explain",
            "replace",
            "block",
            "syncs",
            "failsyncs",
            "report",
            "failrun",
            "blame",
            "group",
            "like",
            "fix",
            "needed",
            "steps",
            "baseline",
        ],
    ),
    (
        "blackout-export",
        &[
            "block", "syncs", "text", "json", "scenario", "junit", "markdown", "html",
        ],
    ),
    (
        "blackout",
        &[
            "sweep",
            "run",
            "failsyncs",
            "sharded",
            "block",
            "scenario",
            "baseline",
        ],
    ),
    (
        "blackout-cli",
        &[
            "args", "report", "clean", "record", "run", "inspect", "merge", "live", "cluster",
            "soak", "help", "main",
        ],
    ),
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, iteratively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file up to its unit tests.
fn library_code(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Identifiers following `prefix` in `text` (`crate::` → module names,
/// `blackout_` → crate suffixes).
fn names_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// The `blackout-*` crates a `Cargo.toml` section depends on.
fn manifest_deps(manifest: &str, section: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == section;
            continue;
        }
        if inside {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim();
                if name == "blackout" || name.starts_with("blackout-") {
                    out.insert(name.to_string());
                }
            }
        }
    }
    out
}

/// The module a file is (`src/model/posix.rs` → `model`; the crate root
/// and `main.rs` → `None` / `main`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib").then_some(name)
}

fn crate_violations(name: &str, allowed: &[&str]) -> Vec<String> {
    let dir = crates_dir().join(name);
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let mut bad = Vec::new();
    for dep in manifest_deps(&manifest, "[dependencies]") {
        if !allowed.contains(&dep.as_str()) {
            bad.push(format!("{name}/Cargo.toml depends on {dep}"));
        }
    }
    for dep in manifest_deps(&manifest, "[dev-dependencies]") {
        let dev_ok = DEV_EDGES.contains(&(name, dep.as_str()));
        if !allowed.contains(&dep.as_str()) && !dev_ok {
            bad.push(format!("{name}/Cargo.toml dev-depends on {dep}"));
        }
    }
    let own = name.replace('-', "_");
    for file in rust_files(&dir.join("src")) {
        let code = library_code(&file);
        for used in names_after(&code, "blackout_") {
            let krate = format!("blackout-{used}");
            if format!("blackout_{used}") != own && !allowed.contains(&krate.as_str()) {
                bad.push(format!("{} uses {krate}", file.display()));
            }
        }
    }
    bad
}

fn module_violations(name: &str, order: &[&str]) -> Vec<String> {
    let src = crates_dir().join(name).join("src");
    let mut bad = Vec::new();
    for file in rust_files(&src) {
        let Some(module) = module_of(&src, &file) else {
            continue;
        };
        let Some(rank) = order.iter().position(|m| *m == module) else {
            bad.push(format!(
                "{}: module `{module}` is not in the allow-list",
                file.display()
            ));
            continue;
        };
        for used in names_after(&library_code(&file), "crate::") {
            if used == module || !order.contains(&used.as_str()) {
                continue; // itself, or an item of the crate root
            }
            let used_rank = order.iter().position(|m| *m == used).unwrap_or(0);
            if used_rank > rank {
                bad.push(format!(
                    "{}: `{module}` uses `{used}`, which comes after it",
                    file.display()
                ));
            }
        }
    }
    bad
}

#[test]
fn crates_depend_only_on_earlier_stages() {
    let mut bad = Vec::new();
    for (i, (name, allowed)) in CRATES.iter().enumerate() {
        // The allow-list itself points one way.
        for a in *allowed {
            let j = CRATES.iter().position(|(n, _)| n == a).unwrap();
            assert!(
                j < i,
                "{name} is allowed {a}, which does not come before it"
            );
        }
        bad.extend(crate_violations(name, allowed));
    }
    assert!(
        bad.is_empty(),
        "imports against the direction:\n{}",
        bad.join("\n")
    );
}

#[test]
fn modules_depend_only_on_earlier_modules() {
    let mut bad = Vec::new();
    for (name, order) in MODULES {
        bad.extend(module_violations(name, order));
    }
    assert!(
        bad.is_empty(),
        "imports against the direction:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_crate_is_in_the_allow_list() {
    let mut on_disk: Vec<String> = fs::read_dir(crates_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("blackout"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CRATES.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed);
}

#[test]
fn the_checker_catches_an_edge_against_the_direction() {
    // The rule applied to a made-up module: exploration naming the recorder.
    let code = "use blackout_record::replay::replay;\nuse crate::dedup::x;\n";
    assert!(names_after(code, "blackout_").contains("record"));
    assert!(names_after(code, "crate::").contains("dedup"));
    let explore = CRATES
        .iter()
        .find(|(n, _)| *n == "blackout-explore")
        .unwrap();
    assert!(!explore.1.contains(&"blackout-record"));
}

/// Whether `name` is defined somewhere in the crates (an item, a module
/// file or directory, an enum variant, a public field), or is a method the
/// code calls.
fn defined(sources: &str, files: &BTreeSet<String>, name: &str) -> bool {
    let items = [
        "fn", "struct", "enum", "trait", "const", "type", "mod", "static",
    ];
    files.contains(name)
        || items
            .iter()
            .any(|kw| has_word(sources, &format!("{kw} {name}")))
        || [",", " {", "(", " =>"]
            .iter()
            .any(|end| sources.contains(&format!("    {name}{end}")))
        || sources.contains(&format!(".{name}("))
        || sources.contains(&format!("pub {name}: "))
        || sources.contains(&format!("\"{name}\""))
}

/// Whether `text` contains `word` not followed by an identifier character.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        text[i + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

/// Whether a backticked token reads as Rust code: a path (`a::B`), a type
/// (`FsState`), a function or constant (`check_trace`, `BUDGET_MAX`).
fn code_name(token: &str) -> Option<&str> {
    let is_ident = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let segments: Vec<&str> = token.split("::").collect();
    if !segments.iter().all(|s| is_ident(s)) {
        return None;
    }
    let last = segments[segments.len() - 1];
    let camel = last.starts_with(|c: char| c.is_ascii_uppercase())
        && last.chars().any(|c| c.is_ascii_lowercase());
    (segments.len() > 1 || last.contains('_') || camel).then_some(last)
}

#[test]
fn architecture_md_names_only_what_exists() {
    let doc = fs::read_to_string(crates_dir().join("../ARCHITECTURE.md")).unwrap();
    let mut sources = String::new();
    let mut files = BTreeSet::new();
    for krate in CRATES.iter().map(|(n, _)| *n) {
        for f in rust_files(&crates_dir().join(krate)) {
            sources.push_str(&fs::read_to_string(&f).unwrap());
            for part in f.iter().map(|p| p.to_string_lossy().into_owned()) {
                files.insert(part.trim_end_matches(".rs").to_string());
            }
        }
    }
    // Odd pieces are inside backticks.
    let missing: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| code_name(t).is_some_and(|n| !defined(&sources, &files, n)))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the code does not define: {missing:?}"
    );
}

#[test]
fn the_name_check_finds_a_name_that_does_not_exist() {
    let sources = "pub fn check_trace() {}\nenum Model {\n    Posix,\n}\n";
    let files = BTreeSet::new();
    assert_eq!(code_name("run::check_trace"), Some("check_trace"));
    assert!(defined(sources, &files, "check_trace"));
    assert!(defined(sources, &files, "Posix"));
    assert!(!defined(sources, &files, "explore_all"));
    assert_eq!(code_name("--stacks"), None);
}

/// The crates each row of ARCHITECTURE.md's crate table says it may use:
/// the crate names in backticks in its second column.
fn table_may_use(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    doc.lines()
        .filter(|l| l.starts_with("| `blackout"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let uses = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(String::from)
                .collect();
            (cells[1].trim_matches('`').to_string(), uses)
        })
        .collect()
}

#[test]
fn architecture_md_crate_table_is_the_allow_list() {
    let doc = fs::read_to_string(crates_dir().join("../ARCHITECTURE.md")).unwrap();
    let want: BTreeMap<String, BTreeSet<String>> = CRATES
        .iter()
        .map(|(name, allowed)| {
            let allowed = allowed.iter().map(|a| a.to_string()).collect();
            (name.to_string(), allowed)
        })
        .collect();
    assert_eq!(
        table_may_use(&doc),
        want,
        "ARCHITECTURE.md's crate table (may use) and CRATES disagree"
    );
}

#[test]
fn the_table_check_reads_what_a_row_may_use() {
    let doc = "| crate | may use | owns |\n|---|---|---|\n| `blackout-x` | `blackout-a`, `blackout-b` | `Thing` |\n| `blackout-y` | — | it |\n";
    let t = table_may_use(doc);
    assert_eq!(t.len(), 2);
    assert_eq!(
        t["blackout-x"],
        BTreeSet::from(["blackout-a".to_string(), "blackout-b".to_string()])
    );
    assert!(t["blackout-y"].is_empty());
}

/// The most lines of library code (up to its unit tests) a file may hold
/// unless ARCHITECTURE.md says why.
const FILE_LINES_MAX: usize = 1000;

/// Library files over [`FILE_LINES_MAX`] lines that ARCHITECTURE.md does
/// not name in its section on them (`crate/src/path.rs` as it writes
/// them).
fn unexplained_large_files(doc: &str) -> Vec<String> {
    let section = doc
        .split("### Files over 1,000 lines of library code")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_default();
    let mut out = Vec::new();
    for (name, _) in CRATES {
        let src = crates_dir().join(name).join("src");
        for file in rust_files(&src) {
            let lines = library_code(&file).lines().count();
            let shown = format!("{name}/src/{}", file.strip_prefix(&src).unwrap().display());
            if lines > FILE_LINES_MAX && !section.contains(&format!("`{shown}`")) {
                out.push(format!("{shown}: {lines} lines"));
            }
        }
    }
    out
}

#[test]
fn no_library_file_is_over_1000_lines_unless_architecture_md_says_why() {
    let doc = fs::read_to_string(crates_dir().join("../ARCHITECTURE.md")).unwrap();
    let large = unexplained_large_files(&doc);
    assert!(
        large.is_empty(),
        "split these, or say in ARCHITECTURE.md why they are one room: {large:?}"
    );
    // And the check sees a large file the section does not name.
    let without = doc.replace("`blackout-explore/src/keys.rs`", "keys");
    assert!(
        unexplained_large_files(&without)
            .iter()
            .any(|f| f.starts_with("blackout-explore/src/keys.rs")),
        "the check must find keys.rs when ARCHITECTURE.md does not name it"
    );
}

/// The most lines of library code (up to its unit tests) the facade may
/// hold in all: it drives the stages and re-exports them, and computes
/// nothing a stage could own.
const FACADE_LINES_MAX: usize = 3000;

/// Lines of library code in the facade, and trait definitions in it (a
/// seam belongs to the stage whose pieces plug into it).
fn facade_code() -> (usize, Vec<String>) {
    let src = crates_dir().join("blackout").join("src");
    let mut lines = 0;
    let mut traits = Vec::new();
    for file in rust_files(&src) {
        let code = library_code(&file);
        lines += code.lines().count();
        for l in code.lines() {
            let t = l.trim_start();
            if t.starts_with("pub trait ") || t.starts_with("trait ") {
                traits.push(format!("{}: {t}", file.display()));
            }
        }
    }
    (lines, traits)
}

#[test]
fn the_facade_computes_nothing_a_stage_could_own() {
    let (lines, traits) = facade_code();
    assert!(
        lines <= FACADE_LINES_MAX,
        "the facade holds {lines} lines of library code (at most {FACADE_LINES_MAX}): \
         move what computes into the stage that owns its data, and keep here what \
         drives the stages"
    );
    assert!(
        traits.is_empty(),
        "a seam is a stage's, not the facade's: {traits:?}"
    );
    // The count sees the facade's code: its run driver is in it.
    assert!(lines > 500, "{lines} lines: the count misses the facade");
}
