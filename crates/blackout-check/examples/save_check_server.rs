//! The checker for `examples/save/save.sh` as a checker server in Rust:
//! one JSON request line per crash state on stdin, `ok` or `fail REASON`
//! on stdout (docs/CHECKER.md).
//!
//! ```sh
//! cargo build --example save_check_server -p blackout-check
//! blackout run --checker-server "$PWD/target/debug/examples/save_check_server" \
//!   --setup 'echo "version 1" > doc.txt' -- examples/save/save.sh no-dir-fsync
//! ```

use std::io::{BufRead, Write};
use std::path::Path;

/// `None` if the state is acceptable, else why not.
fn check(dir: &Path, acked: &[String]) -> Option<String> {
    let Ok(doc) = std::fs::read(dir.join("doc.txt")) else {
        return Some("doc.txt is missing".into());
    };
    match doc.as_slice() {
        b"" => Some("doc.txt is empty".into()),
        b"version 2\n" => None,
        b"version 1\n" if acked.iter().any(|p| p == "saved") => {
            Some("\"saved\" was printed, but doc.txt is still version 1".into())
        }
        b"version 1\n" => None,
        _ => Some("doc.txt is neither version".into()),
    }
}

fn main() -> std::io::Result<()> {
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let request: serde_json::Value = serde_json::from_str(&line?)?;
        let dir = Path::new(request["dir"].as_str().unwrap_or_default());
        let acked: Vec<String> = request["acked"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let answer = match check(dir, &acked) {
            None => "ok".to_string(),
            // One line per answer.
            Some(reason) => format!("fail {}", reason.replace('\n', " / ")),
        };
        let mut out = stdout.lock();
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(())
}
