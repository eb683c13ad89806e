//! Stacks: where in the program an op was issued (`blackout record
//! --stacks`, strace `-k`).
//!
//! strace prints the stack of each call after it, one frame a line:
//! ` > /path/prog(save+0x26) [0x117f]` — the object, the nearest symbol and
//! the offset in the object's file. Replay keeps the frames of each op (it
//! never reads a file); [`resolve_trace`], run by the recorder while the
//! binaries are still there, picks the frame in the user's own code and names
//! its function and, where debug information exists, its source file and
//! line.

use std::collections::HashMap;

use blackout_oplog::origin::{Frame, Origin};
use blackout_oplog::trace::Trace;

/// Parses a frame line (`> /obj(sym+0x26) [0x117f]`, without the leading
/// spaces).
pub fn parse_frame(line: &[u8]) -> Option<Frame> {
    let line = std::str::from_utf8(line).ok()?;
    let body = line.strip_prefix('>')?.trim();
    let open = body.rfind(" [0x")?;
    let offset = u64::from_str_radix(body[open + 4..].strip_suffix(']')?, 16).ok()?;
    let head = &body[..open];
    let (object, symbol) = match head
        .strip_suffix(')')
        .and_then(|h| h.rfind('(').map(|p| (h, p)))
    {
        Some((h, p)) => {
            let inner = &h[p + 1..];
            let sym = inner.rsplit_once('+').map_or(inner, |(s, _)| s);
            (&h[..p], (!sym.is_empty()).then(|| sym.to_string()))
        }
        None => (head, None),
    };
    Some(Frame {
        object: object.to_string(),
        symbol,
        offset,
    })
}

/// Objects of the system (the C library, the loader): never the user's code.
fn system_object(path: &str) -> bool {
    [
        "/lib/",
        "/lib64/",
        "/usr/lib/",
        "/usr/lib64/",
        "/usr/libexec/",
    ]
    .iter()
    .any(|p| path.starts_with(p))
        || path.contains("linux-vdso")
        || !path.starts_with('/')
}

/// Source files of a language's standard library or of dependencies.
fn library_source(file: &str) -> bool {
    file.starts_with("/rustc/")
        || file.contains("/.cargo/registry/")
        || file.contains("/.rustup/toolchains/")
        || file.starts_with("/usr/include/")
        || file.starts_with("/usr/src/")
        || file.starts_with("./string/")
        || file.starts_with("../sysdeps/")
}

/// One object's debug information and its file-offset to address map.
struct Object {
    loader: addr2line::Loader,
    /// (file offset, file size, address) of each segment.
    segments: Vec<(u64, u64, u64)>,
}

impl Object {
    fn open(path: &str) -> Option<Object> {
        use object::{Object as _, ObjectSegment};
        let data = std::fs::read(path).ok()?;
        let file = object::File::parse(&*data).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        let loader = addr2line::Loader::new(path).ok()?;
        Some(Object { loader, segments })
    }

    /// The address a file offset is loaded at.
    fn address(&self, offset: u64) -> u64 {
        self.segments
            .iter()
            .find(|(off, size, _)| offset >= *off && offset < off + size)
            .map_or(offset, |(off, _, addr)| addr + (offset - off))
    }

    /// The innermost frame at a return address whose source is the user's
    /// (inlined frames included): function, file, line. With no such frame,
    /// the function alone.
    fn locate(&self, offset: u64) -> (Option<String>, Option<(String, Option<u32>)>) {
        // A return address points after the call: look up the call itself.
        let probe = self.address(offset).saturating_sub(1);
        let mut first_function = None;
        if let Ok(mut frames) = self.loader.find_frames(probe) {
            while let Ok(Some(f)) = frames.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok().map(|d| d.into_owned()));
                if first_function.is_none() {
                    first_function = function.clone();
                }
                if let Some(loc) = f.location {
                    if let Some(file) = loc.file {
                        if !library_source(file) {
                            return (function, Some((file.to_string(), loc.line)));
                        }
                    }
                }
            }
        }
        let symbol = self
            .loader
            .find_symbol(probe)
            .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
        (first_function.or(symbol), None)
    }
}

/// Resolves frames to origins, opening each object once.
#[derive(Default)]
pub struct Resolver {
    objects: HashMap<String, Option<Object>>,
}

impl Resolver {
    /// The origin of a call from its frames: the innermost frame in the
    /// user's code with a source line; else the innermost frame outside the
    /// system's libraries, by function; else nothing.
    pub fn origin(&mut self, frames: &[Frame]) -> Option<Origin> {
        let mut fallback = None;
        for f in frames.iter().filter(|f| !system_object(&f.object)) {
            let obj = self
                .objects
                .entry(f.object.clone())
                .or_insert_with(|| Object::open(&f.object));
            let (function, place) = match obj {
                Some(o) => o.locate(f.offset),
                None => (None, None),
            };
            let function = function.or_else(|| f.symbol.clone());
            match place {
                Some((file, line)) => {
                    return Some(Origin {
                        function,
                        file: Some(file),
                        line,
                        object: f.object.clone(),
                    })
                }
                None => {
                    fallback.get_or_insert(Origin {
                        function,
                        file: None,
                        line: None,
                        object: f.object.clone(),
                    });
                }
            }
        }
        fallback
    }
}

/// Names the origin of every op that has frames.
pub fn resolve_trace(trace: &mut Trace) {
    let mut r = Resolver::default();
    for op in &mut trace.ops {
        if !op.stack.is_empty() {
            op.origin = r.origin(&op.stack);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_frames() {
        let f = parse_frame(b"> /home/u/app/p(save+0x26) [0x117f]").unwrap();
        assert_eq!(f.object, "/home/u/app/p");
        assert_eq!(f.symbol.as_deref(), Some("save"));
        assert_eq!(f.offset, 0x117f);
        let f = parse_frame(b"> /usr/lib/x86_64-linux-gnu/libc.so.6() [0xf8350]").unwrap();
        assert_eq!(f.symbol, None);
        let f =
            parse_frame(b"> /opt/a (b)/prog(_ZN3foo3bar17h0123456789abcdefE+0x10) [0x20]").unwrap();
        assert_eq!(f.object, "/opt/a (b)/prog");
        assert!(parse_frame(b"> garbage").is_none());
        assert!(parse_frame(b"write(1, ...) = 1").is_none());
    }

    #[test]
    fn system_libraries_are_never_the_origin() {
        assert!(system_object("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert!(system_object("/lib64/ld-linux-x86-64.so.2"));
        assert!(!system_object("/home/u/app/target/debug/app"));
        let mut r = Resolver::default();
        let frames = vec![Frame {
            object: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
            symbol: Some("__write".into()),
            offset: 0xf8350,
        }];
        assert_eq!(r.origin(&frames), None);
    }
}
