//! Syncs taken out of a workload, or made to fail. Taken out: the program
//! recorded as if a sync call site were deleted from its source
//! (`--without-sync`, and each call site `run --syncs` measures on a real
//! file system). Made to fail: strace injects EIO into one call
//! ([`FailSync`], `run --fail-syncs`), the call not made, as a disk's
//! failed writeback reports itself.
//!
//! A small library (`omit_syncs.c`, built into the binary) is preloaded
//! into the workload: an `fsync`, `fdatasync` or `sync_file_range` the
//! program asks of the C library, on a file the list names, returns 0
//! without reaching the kernel. A program that makes its syncs another way
//! (a static binary, a raw system call, a setuid program the loader will
//! not preload into) still makes them; the recording shows it, and
//! [`made_anyway`] finds it, so a sync is never said taken out when it was
//! not.
//!
//! ```
//! use blackout_record::omit::OmittedSync;
//!
//! let s: OmittedSync = "fdatasync(files named like data-#.log)".parse().unwrap();
//! assert!(s.matches("fdatasync", "data-12.log"));
//! assert!(!s.matches("fsync", "data-12.log"));
//! assert_eq!(s.to_string(), "fdatasync(files named like data-#.log)");
//! assert!("fsync".parse::<OmittedSync>().is_err());
//! ```

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::str::FromStr;

use blackout_oplog::trace::Trace;

/// The preloaded library, built from `omit_syncs.c` by the build script.
const LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libblackout_omit_syncs.so"));

/// The calls the library can take out.
pub const CALLS: [&str; 3] = ["fsync", "fdatasync", "sync_file_range"];

/// One sync taken out: a call on a path of the directory under test, as a
/// `run --syncs` report names its call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OmittedSync {
    /// `fsync`, `fdatasync` or `sync_file_range`.
    pub call: String,
    /// The path, relative to the directory under test (`.` is the
    /// directory itself); absolute for a file outside it.
    pub path: String,
    /// `path` is a pattern in which `#` stands for a run of digits (a
    /// site named `files named like data-#.log`).
    pub pattern: bool,
}

impl OmittedSync {
    /// Whether a sync made by `syscall` on `path` (as
    /// [`Trace::show_path`] shows it) is one this takes out.
    pub fn matches(&self, syscall: &str, path: &str) -> bool {
        syscall == self.call
            && if self.pattern {
                like(self.path.as_bytes(), path.as_bytes())
            } else {
                path == self.path
            }
    }

    /// The library's entry: call, `e` or `p`, the absolute path.
    fn entry(&self, dir: &Path) -> Vec<u8> {
        let mut e =
            format!("{}\t{}\t", self.call, if self.pattern { 'p' } else { 'e' }).into_bytes();
        let path = Path::new(&self.path);
        if path.is_absolute() {
            e.extend_from_slice(path.as_os_str().as_bytes());
        } else if self.path == "." {
            e.extend_from_slice(dir.as_os_str().as_bytes());
        } else {
            e.extend_from_slice(dir.join(path).as_os_str().as_bytes());
        }
        e
    }
}

impl FromStr for OmittedSync {
    type Err = String;

    /// `CALL(PATH)` or `CALL(files named like PATTERN)`, as `run --syncs`
    /// names a call site.
    fn from_str(s: &str) -> Result<Self, String> {
        let form = "expected CALL(PATH), e.g. fsync(doc.txt.tmp)";
        let (call, rest) = s.split_once('(').ok_or_else(|| format!("`{s}`: {form}"))?;
        let inner = rest
            .strip_suffix(')')
            .ok_or_else(|| format!("`{s}`: {form}"))?;
        if !CALLS.contains(&call) {
            return Err(format!(
                "`{s}`: only {} can be taken out of a program, not {call}",
                CALLS.join(", ")
            ));
        }
        let (path, pattern) = match inner.strip_prefix("files named like ") {
            Some(p) => (p, true),
            None => (inner, false),
        };
        if path.is_empty() || path.contains(['\n', '\t']) {
            return Err(format!("`{s}`: {form}"));
        }
        Ok(OmittedSync {
            call: call.to_string(),
            path: path.to_string(),
            pattern,
        })
    }
}

impl fmt::Display for OmittedSync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pattern {
            write!(f, "{}(files named like {})", self.call, self.path)
        } else {
            write!(f, "{}({})", self.call, self.path)
        }
    }
}

/// A sync made to fail with EIO: the `nth` call of `call` (from 1) in
/// each thread, counted by strace (`-e inject=CALL:error=EIO:when=N`),
/// which makes the call fail without making it. A thread other than the
/// one meant that makes as many such calls fails too; the recording counts
/// the failures injected ([`crate::Recording::injected`]) so a caller can
/// tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailSync {
    /// `fsync` or `fdatasync` (or another sync call strace knows).
    pub call: String,
    /// Which call of each thread fails, from 1.
    pub nth: u32,
}

impl FailSync {
    /// strace's injection for it.
    pub(crate) fn inject(&self) -> String {
        format!("inject={}:error=EIO:when={}", self.call, self.nth)
    }
}

/// Whether `path` is `pattern`, `#` standing for a run of digits.
fn like(pattern: &[u8], path: &[u8]) -> bool {
    let mut at = 0;
    for &c in pattern {
        if c == b'#' {
            let digits = path[at..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits == 0 {
                return false;
            }
            at += digits;
        } else if path.get(at) == Some(&c) {
            at += 1;
        } else {
            return false;
        }
    }
    at == path.len()
}

/// Writes the library into `scratch` and returns the variables that
/// preload it into a workload run in `dir`, taking `omitted` out of it
/// (`LD_PRELOAD` keeps what the caller's `env`, else the environment,
/// already preloads).
pub(crate) fn preload(
    omitted: &[OmittedSync],
    scratch: &Path,
    dir: &Path,
    env: &[(OsString, OsString)],
) -> std::io::Result<Vec<(OsString, OsString)>> {
    let lib = scratch.join("libblackout_omit_syncs.so");
    fs::write(&lib, LIBRARY)?;
    let mut list = Vec::new();
    for o in omitted {
        list.extend(o.entry(dir));
        list.push(b'\n');
    }
    let mut preload = lib.into_os_string();
    let before = env
        .iter()
        .rev()
        .find(|(k, _)| k == "LD_PRELOAD")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os("LD_PRELOAD"));
    if let Some(before) = before.filter(|b| !b.is_empty()) {
        preload.push(":");
        preload.push(before);
    }
    Ok(vec![
        ("LD_PRELOAD".into(), preload),
        (
            "BLACKOUT_OMIT_SYNCS".into(),
            std::ffi::OsStr::from_bytes(&list).to_os_string(),
        ),
    ])
}

/// Why a sync taken out was made anyway, from the workload's standard
/// error: the loader's own line when it could not preload the library (a
/// scratch directory on a `noexec` mount, a setuid program), else that the
/// program does not ask the C library for it.
pub fn why_made(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text
        .lines()
        .find(|l| l.contains("libblackout_omit_syncs.so") && l.contains("cannot be preloaded"))
    {
        Some(line) => format!(
            "the loader did not preload the library that takes syncs out ({}; a scratch directory on a noexec mount does this: set TMPDIR elsewhere)",
            line.trim()
        ),
        None => "it does not ask the C library for it (a static binary or a raw system call)".into(),
    }
}

/// The first sync op of `trace` one of `omitted` names: the program made
/// it anyway (not through the C library).
pub fn made_anyway<'a>(
    trace: &Trace,
    omitted: &'a [OmittedSync],
) -> Option<(usize, &'a OmittedSync)> {
    trace.ops.iter().enumerate().find_map(|(i, op)| {
        if !op.kind.is_sync() {
            return None;
        }
        let path = trace.show_path(&op.path);
        omitted
            .iter()
            .find(|o| o.matches(&op.syscall, &path))
            .map(|o| (i, o))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_digits_where_it_has_a_hash() {
        assert!(like(b"data-#.log", b"data-1.log"));
        assert!(like(b"data-#.log", b"data-000123.log"));
        assert!(!like(b"data-#.log", b"data-.log"));
        assert!(!like(b"data-#.log", b"data-1.logx"));
        assert!(!like(b"data-#.log", b"data-x.log"));
        assert!(like(b"#", b"7"));
    }

    #[test]
    fn a_site_name_parses_back_to_itself_and_other_forms_are_refused() {
        for s in [
            "fsync(.)",
            "fsync(doc.txt.tmp)",
            "sync_file_range(files named like #.sst)",
        ] {
            assert_eq!(s.parse::<OmittedSync>().unwrap().to_string(), s);
        }
        for bad in ["fsync", "fsync()", "msync(x)", "fsync(x", "fsync(a\tb)"] {
            assert!(bad.parse::<OmittedSync>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_library_the_loader_refused_is_said_so() {
        let refused = b"ERROR: ld.so: object '/s/blackout-x/libblackout_omit_syncs.so' from LD_PRELOAD cannot be preloaded (failed to map segment from shared object): ignored.\nsaved\n";
        let why = why_made(refused);
        assert!(
            why.starts_with("the loader did not preload the library"),
            "{why}"
        );
        assert!(why.contains("failed to map segment"), "{why}");
        assert!(why_made(b"").contains("does not ask the C library"));
    }

    #[test]
    fn entries_name_absolute_paths() {
        let dir = Path::new("/m");
        let e = |s: &str| String::from_utf8(s.parse::<OmittedSync>().unwrap().entry(dir)).unwrap();
        assert_eq!(e("fsync(.)"), "fsync\te\t/m");
        assert_eq!(e("fsync(a/b)"), "fsync\te\t/m/a/b");
        assert_eq!(e("fdatasync(/etc/x)"), "fdatasync\te\t/etc/x");
        assert_eq!(
            e("fdatasync(files named like #.log)"),
            "fdatasync\tp\t/m/#.log"
        );
    }
}
