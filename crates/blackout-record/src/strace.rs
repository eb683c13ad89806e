//! Parsing `strace -f -xx -y` logs into completed system calls.
//!
//! The parser works on bytes and never allocates for a call that completes on
//! one line. A call split by another thread (`<unfinished ...>` … `<... NAME
//! resumed>`) is joined into one owned text. Calls come out in the order they
//! *completed*; each keeps the line where it started, which is the line a user
//! looks at.
//!
//! Arguments are not decoded up front: [`Call::args`] splits the top level on
//! demand and the helpers ([`decode_string`], [`parse_int`], [`decode_iovecs`]) decode
//! only what replay needs, so the `read` of a shared library costs a scan, not
//! a decode.

use std::borrow::Cow;
use std::collections::HashMap;

use memchr::memmem;

/// A parse error: what is wrong with the log, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Line of the log the error is about (1-based).
    pub line: u32,
    /// What is wrong, in one sentence.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// The return value of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ret<'a> {
    /// Success, with the value and the `-y` path annotation when present
    /// (still escaped; see [`decode_annotation`]).
    Ok(i64, Option<&'a [u8]>),
    /// Failure, with the errno name (`ENOENT`).
    Err(&'a [u8]),
    /// `= ?`: the call never returned (process exit, execve in a thread).
    Unknown,
}

impl Ret<'_> {
    /// The value of a successful call.
    pub fn ok(&self) -> Option<i64> {
        match self {
            Ret::Ok(v, _) => Some(*v),
            _ => None,
        }
    }
}

/// One completed system call.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// Thread id that made the call (0 when the log has no pid column).
    pub pid: u32,
    /// Line where the call started.
    pub line: u32,
    /// Line where the call completed (equal to `line` unless it was split).
    pub end_line: u32,
    /// The whole call, `name(args) = ret`, joined when it was split.
    pub text: Cow<'a, [u8]>,
    /// Length of the name at the start of `text`.
    name_len: usize,
    /// Stack frames strace printed after the call (`-k`), each without its
    /// leading spaces (`> /prog(func+0x26) [0x117f]`).
    pub stack: Vec<&'a [u8]>,
}

/// A process or thread ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    /// Thread id.
    pub pid: u32,
    /// Line of the `+++ ... +++` record.
    pub line: u32,
    /// The exit code, or `None` when killed by a signal (or when a thread's
    /// id ended because its execve took over the leader's id: no signal
    /// either).
    pub code: Option<i32>,
    /// The signal name when killed by a signal.
    pub signal: Option<String>,
}

/// What the log says, in completion order.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A system call that completed (or was left with `= ?`).
    Call(Call<'a>),
    /// A thread or process ended.
    Exit(Exit),
    /// A call started and never completed before its thread ended or the log
    /// ended.
    Unfinished(Call<'a>),
}

impl<'a> Call<'a> {
    /// The system call's name.
    pub fn name(&self) -> &[u8] {
        &self.text[..self.name_len]
    }

    /// The name as text (names are ASCII).
    pub fn name_str(&self) -> &str {
        std::str::from_utf8(self.name()).unwrap_or("?")
    }

    /// The text between the parentheses.
    pub fn args_text(&self) -> &[u8] {
        let (args, _) = split_call(&self.text, self.name_len);
        args
    }

    /// The top-level arguments.
    pub fn args(&self) -> Vec<&[u8]> {
        split_args(self.args_text())
    }

    /// The return value.
    pub fn ret(&self) -> Ret<'_> {
        let (_, ret) = split_call(&self.text, self.name_len);
        parse_ret(ret)
    }
}

/// Splits `name(args) = ret` into the args and the ret text. For a call with no
/// return (unfinished), the ret text is empty.
fn split_call(text: &[u8], name_len: usize) -> (&[u8], &[u8]) {
    let open = name_len + 1;
    match memmem::rfind(text, b" = ") {
        Some(eq) if eq >= open => {
            // Walk back over padding spaces to the closing parenthesis.
            let mut close = eq;
            while close > open && text[close - 1] == b' ' {
                close -= 1;
            }
            let args_end = if close > open && text[close - 1] == b')' {
                close - 1
            } else {
                close
            };
            (&text[open.min(args_end)..args_end], &text[eq + 3..])
        }
        _ => (&text[open.min(text.len())..], &[]),
    }
}

fn parse_ret(ret: &[u8]) -> Ret<'_> {
    let ret = trim(ret);
    if ret.is_empty() || ret[0] == b'?' {
        return Ret::Unknown;
    }
    let (num_end, value) = match scan_int(ret) {
        Some(v) => v,
        None => return Ret::Unknown,
    };
    let rest = &ret[num_end..];
    if value < 0 {
        let rest = trim(rest);
        let name_end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        if name_end > 0 && rest[0] == b'E' {
            return Ret::Err(&rest[..name_end]);
        }
    }
    let annotation = if rest.first() == Some(&b'<') {
        matching_angle(rest).map(|end| &rest[1..end])
    } else {
        None
    };
    Ret::Ok(value, annotation)
}

/// Position of the `>` matching the `<` at `s[0]`.
fn matching_angle(s: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &b) in s.iter().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

/// Scans a leading integer (decimal, `0x` hex, `0` octal, optional `-`).
/// Returns the number of bytes used and the value.
fn scan_int(s: &[u8]) -> Option<(usize, i64)> {
    let (neg, start) = match s.first() {
        Some(b'-') => (true, 1),
        _ => (false, 0),
    };
    let body = &s[start..];
    let (radix, skip) = if body.starts_with(b"0x") || body.starts_with(b"0X") {
        (16, 2)
    } else if body.len() > 1 && body[0] == b'0' && body[1].is_ascii_digit() {
        (8, 1)
    } else {
        (10, 0)
    };
    let digits = &body[skip..];
    let n = digits
        .iter()
        .take_while(|b| (**b as char).is_digit(radix))
        .count();
    if n == 0 {
        if skip == 1 || (radix == 10 && body.first() == Some(&b'0')) {
            return Some((start + 1, 0));
        }
        return None;
    }
    let text = std::str::from_utf8(&digits[..n]).ok()?;
    let value = u64::from_str_radix(text, radix).ok()? as i64;
    Some((
        start + skip + n,
        if neg { value.wrapping_neg() } else { value },
    ))
}

/// Parses an integer argument: `3`, `3<\x2f...>`, `0x10`, `-1`, `AT_FDCWD`.
pub fn parse_int(arg: &[u8]) -> Option<i64> {
    let arg = trim(arg);
    if arg.starts_with(b"AT_FDCWD") {
        return Some(AT_FDCWD);
    }
    scan_int(arg).map(|(_, v)| v)
}

/// The value `AT_FDCWD` has on Linux.
pub const AT_FDCWD: i64 = -100;

/// The `-y` annotation of an argument (`3<\x2f\x74>` → `\x2f\x74`), escaped.
pub fn arg_annotation(arg: &[u8]) -> Option<&[u8]> {
    let arg = trim(arg);
    let open = memchr::memchr(b'<', arg)?;
    let end = matching_angle(&arg[open..])?;
    Some(&arg[open + 1..open + end])
}

/// Whether a flags argument (`O_WRONLY|O_CREAT`) contains `flag`.
pub fn has_flag(arg: &[u8], flag: &[u8]) -> bool {
    trim(arg).split(|&b| b == b'|').any(|f| trim(f) == flag)
}

/// Splits an argument list at top-level commas.
pub fn split_args(args: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let args = trim(args);
    if args.is_empty() {
        return out;
    }
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < args.len() {
        match args[i] {
            b'"' => {
                i = skip_string(args, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'<' if i > 0 && is_annotation_owner(args[i - 1]) => {
                if let Some(end) = matching_angle(&args[i..]) {
                    i += end + 1;
                    continue;
                }
            }
            b'/' if args.get(i + 1) == Some(&b'*') => {
                // A comment such as `/* 35 vars */`.
                if let Some(end) = memmem::find(&args[i + 2..], b"*/") {
                    i += end + 4;
                    continue;
                }
            }
            b',' if depth <= 0 => {
                out.push(trim(&args[start..i]));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(trim(&args[start..]));
    out
}

fn is_annotation_owner(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// Returns the index just past the string literal starting at `s[start]`
/// (a `"`), including a trailing `...` truncation mark.
fn skip_string(s: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < s.len() {
        match memchr::memchr2(b'"', b'\\', &s[i..]) {
            None => return s.len(),
            Some(off) => {
                i += off;
                if s[i] == b'\\' {
                    i += 2;
                } else {
                    i += 1;
                    if s[i.min(s.len())..].starts_with(b"...") {
                        i += 3;
                    }
                    return i.min(s.len());
                }
            }
        }
    }
    s.len()
}

/// A decoded string argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Whether strace cut the string short (`"..."...`).
    pub truncated: bool,
}

/// Decodes a string argument (`"\x68\x69"`, `"hi\n"`); `None` if `arg` is not
/// a string literal (e.g. `NULL` or an address).
pub fn decode_string(arg: &[u8]) -> Option<Decoded> {
    let arg = trim(arg);
    if arg.first() != Some(&b'"') {
        return None;
    }
    let end = skip_string(arg, 0);
    let lit = &arg[..end];
    let truncated = lit.ends_with(b"...") && lit.len() >= 5 && lit[lit.len() - 4] == b'"';
    let inner_end = if truncated {
        lit.len() - 4
    } else {
        lit.len() - 1
    };
    if inner_end < 1 || lit[inner_end] != b'"' {
        return None;
    }
    let bytes = unescape(&lit[1..inner_end])?;
    Some(Decoded { bytes, truncated })
}

/// Decodes a `-y` annotation (already without its angle brackets) to bytes.
pub fn decode_annotation(ann: &[u8]) -> Option<Vec<u8>> {
    let ann = ann.strip_suffix(b" (deleted)").unwrap_or(ann);
    unescape(ann)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Undoes strace's escaping: `\xHH`, `\NNN` octal, `\n \t \r \v \f \\ \"`.
fn unescape(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 + 1);
    let mut i = 0;
    while i < s.len() {
        // Fast path: runs of `\xHH`, which is all a `-xx` log has.
        if s[i] == b'\\' && i + 3 < s.len() && s[i + 1] == b'x' {
            let hi = hex(s[i + 2])?;
            let lo = hex(s[i + 3])?;
            out.push(hi << 4 | lo);
            i += 4;
            continue;
        }
        if s[i] != b'\\' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        let c = *s.get(i + 1)?;
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'\\' => out.push(b'\\'),
            b'"' => out.push(b'"'),
            b'\'' => out.push(b'\''),
            b'x' => {
                // A `\x` with a single hex digit left (end of string).
                let hi = hex(*s.get(i)?)?;
                match s.get(i + 1).and_then(|&b| hex(b)) {
                    Some(lo) => {
                        out.push(hi << 4 | lo);
                        i += 2;
                    }
                    None => {
                        out.push(hi);
                        i += 1;
                    }
                }
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 {
                    match s.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                            n += 1;
                        }
                        _ => break,
                    }
                }
                out.push(u8::try_from(v).ok()?);
            }
            _ => return None,
        }
    }
    Some(out)
}

/// One `struct iovec` array element: `{iov_base="...", iov_len=5}`.
pub fn decode_iovecs(arg: &[u8]) -> Option<Decoded> {
    let arg = trim(arg);
    let inner = arg.strip_prefix(b"[")?.strip_suffix(b"]")?;
    let mut bytes = Vec::new();
    let mut truncated = false;
    for elem in split_args(inner) {
        if elem == b"..." {
            truncated = true;
            continue;
        }
        let elem = elem.strip_prefix(b"{")?.strip_suffix(b"}")?;
        let fields = split_args(elem);
        let base = fields.iter().find_map(|f| f.strip_prefix(b"iov_base="))?;
        let d = decode_string(base)?;
        truncated |= d.truncated;
        bytes.extend_from_slice(&d.bytes);
    }
    Some(Decoded { bytes, truncated })
}

/// The names the replay looks at; every other call is skipped at parse time
/// (only counted).
fn interesting(name: &[u8]) -> bool {
    matches!(
        name,
        b"open"
            | b"openat"
            | b"openat2"
            | b"creat"
            | b"close"
            | b"close_range"
            | b"dup"
            | b"dup2"
            | b"dup3"
            | b"fcntl"
            | b"fcntl64"
            | b"read"
            | b"readv"
            | b"preadv2"
            | b"write"
            | b"writev"
            | b"pwrite64"
            | b"pwritev"
            | b"pwritev2"
            | b"lseek"
            | b"truncate"
            | b"ftruncate"
            | b"fallocate"
            | b"rename"
            | b"renameat"
            | b"renameat2"
            | b"unlink"
            | b"unlinkat"
            | b"rmdir"
            | b"link"
            | b"linkat"
            | b"symlink"
            | b"symlinkat"
            | b"mkdir"
            | b"mkdirat"
            | b"mknod"
            | b"mknodat"
            | b"fsync"
            | b"fdatasync"
            | b"sync"
            | b"syncfs"
            | b"sync_file_range"
            | b"copy_file_range"
            | b"sendfile"
            | b"sendfile64"
            | b"splice"
            | b"tee"
            | b"vmsplice"
            | b"clone"
            | b"clone3"
            | b"fork"
            | b"vfork"
            | b"execve"
            | b"execveat"
            | b"chdir"
            | b"fchdir"
            | b"mmap"
            | b"io_uring_setup"
            | b"pipe"
            | b"pipe2"
            | b"ioctl"
    )
}

/// The system calls the recorder asks strace to trace: everything [`parse_log`]
/// keeps.
pub const TRACED_SYSCALLS: &str = "open,openat,openat2,creat,close,close_range,dup,dup2,dup3,\
fcntl,read,readv,preadv2,write,writev,pwrite64,pwritev,pwritev2,lseek,truncate,ftruncate,\
fallocate,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat,\
mkdir,mkdirat,mknod,mknodat,fsync,fdatasync,sync,syncfs,sync_file_range,copy_file_range,\
sendfile,splice,tee,vmsplice,clone,clone3,fork,vfork,execve,execveat,chdir,fchdir,mmap,\
io_uring_setup,pipe,pipe2,ioctl";

/// Counts of what the parser saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// Lines in the log.
    pub lines: u64,
    /// Calls parsed (completed or left unfinished).
    pub calls: u64,
    /// Calls skipped because replay never looks at them.
    pub skipped: u64,
}

/// A parsed log: its events in completion order and counts.
#[derive(Debug, Clone)]
pub struct Log<'a> {
    /// Events in the order they completed.
    pub events: Vec<Event<'a>>,
    /// What was seen.
    pub stats: ParseStats,
}

struct Pending<'a> {
    line: u32,
    text: Cow<'a, [u8]>,
    name_len: usize,
}

impl<'a> Pending<'a> {
    /// The call as left unfinished when its thread ended at `end_line`.
    fn into_unfinished(self, pid: u32, end_line: u32) -> Event<'a> {
        Event::Unfinished(Call {
            pid,
            line: self.line,
            end_line,
            text: self.text,
            name_len: self.name_len,
            stack: Vec::new(),
        })
    }
}

/// Parses a whole log. Fails on the first line that is not strace output.
///
/// ```
/// let log = b"42  write(1, \"\\x68\\x69\", 2) = 2\n42  +++ exited with 0 +++\n";
/// let parsed = blackout_record::strace::parse_log(log).unwrap();
/// assert_eq!(parsed.events.len(), 2);
/// ```
pub fn parse_log(log: &[u8]) -> Result<Log<'_>, ParseError> {
    parse_log_shedding(log, &mut || {})
}

/// A caller reading a memory-mapped log is told each time this many more
/// bytes of it were read ([`parse_log_shedding`]), so that it can drop the
/// pages read so far (they count as resident while mapped).
pub const SHED_BYTES: usize = 64 << 20;

/// [`parse_log`], calling `shed()` after every [`SHED_BYTES`] of the log.
pub fn parse_log_shedding<'a>(
    log: &'a [u8],
    shed: &mut dyn FnMut(),
) -> Result<Log<'a>, ParseError> {
    let mut parser = Parser::default();
    let mut rest = log;
    let mut unshed = 0;
    while !rest.is_empty() {
        if unshed >= SHED_BYTES {
            shed();
            unshed = 0;
        }
        parser.line_no = parser.line_no.checked_add(1).ok_or_else(|| ParseError {
            line: parser.line_no,
            message: "log has too many lines".into(),
        })?;
        let (line, next, complete) = match memchr::memchr(b'\n', rest) {
            Some(nl) => (&rest[..nl], &rest[nl + 1..], true),
            None => (rest, &rest[rest.len()..], false),
        };
        rest = next;
        unshed += line.len() + 1;
        parser.stats.lines += 1;
        parser.line(line, complete)?;
    }
    Ok(parser.finish())
}

/// The state of [`parse_log`] between lines.
#[derive(Default)]
struct Parser<'a> {
    events: Vec<Event<'a>>,
    stats: ParseStats,
    /// Calls left `<unfinished ...>`, by thread.
    pending: HashMap<u32, Pending<'a>>,
    /// The line being parsed (1-based).
    line_no: u32,
    /// The event the previous line completed, if it was a call.
    last_call: Option<usize>,
}

impl<'a> Parser<'a> {
    fn err(&self, message: String) -> ParseError {
        ParseError {
            line: self.line_no,
            message,
        }
    }

    /// One line of the log; `complete` is false for a last line without its
    /// newline.
    fn line(&mut self, line: &'a [u8], complete: bool) -> Result<(), ParseError> {
        let line = trim(line);
        if line.is_empty() {
            return Ok(());
        }
        // A stack frame (`-k`) belongs to the call on the line before it.
        if line.starts_with(b"> ") {
            if let Some(Event::Call(c)) = self.last_call.and_then(|i| self.events.get_mut(i)) {
                c.stack.push(line);
            }
            return Ok(());
        }
        self.last_call = None;
        let (pid, body) = split_pid(line);
        let body = skip_timestamp(body);
        if let Some(exit) = body.strip_prefix(b"+++ ") {
            return self.exit(pid, body, exit);
        }
        if body.starts_with(b"--- ") || body.starts_with(b"strace: ") {
            return Ok(());
        }
        if let Some(resumed) = body.strip_prefix(b"<... ") {
            return self.resumed(pid, body, resumed, complete);
        }
        self.call(pid, body, complete)
    }

    /// A `+++ ... +++` record: `exit` is what follows the `+++ `.
    fn exit(&mut self, pid: u32, body: &[u8], exit: &[u8]) -> Result<(), ParseError> {
        let line_no = self.line_no;
        if let Some(from) = parse_superseded(exit) {
            // Thread `from` called execve while it was not the thread
            // group leader: it takes over the leader's id `pid`, so its
            // unfinished execve resumes under `pid`, and its own id ends.
            if let Some(p) = self.pending.remove(&pid) {
                self.events.push(p.into_unfinished(pid, line_no));
            }
            if let Some(p) = self.pending.remove(&from) {
                self.pending.insert(pid, p);
            }
            self.events.push(Event::Exit(Exit {
                pid: from,
                line: line_no,
                code: None,
                signal: None,
            }));
            return Ok(());
        }
        let exit = parse_exit(pid, line_no, exit)
            .ok_or_else(|| self.err(format!("unrecognised exit record `{}`", show(body))))?;
        if let Some(p) = self.pending.remove(&pid) {
            self.events.push(p.into_unfinished(pid, line_no));
        }
        self.events.push(Event::Exit(exit));
        Ok(())
    }

    /// A `<... NAME resumed>` line: `resumed` is what follows the `<... `.
    fn resumed(
        &mut self,
        pid: u32,
        body: &[u8],
        resumed: &'a [u8],
        complete: bool,
    ) -> Result<(), ParseError> {
        let marker = memmem::find(resumed, b" resumed>")
            .ok_or_else(|| self.err(format!("unrecognised resumed call `{}`", show(body))))?;
        let name = &resumed[..marker];
        let tail = &resumed[marker + b" resumed>".len()..];
        let Some(p) = self.pending.remove(&pid) else {
            // Its start was before the log began, or it is a call we skip.
            if interesting(name) {
                return Err(self.err(format!(
                    "`{}` resumed in process {pid} but never started",
                    show(name)
                )));
            }
            self.stats.skipped += 1;
            return Ok(());
        };
        if &p.text[..p.name_len] != name {
            return Err(self.err(format!(
                "`{}` resumed in process {pid}, but `{}` was unfinished there",
                show(name),
                show(&p.text[..p.name_len])
            )));
        }
        let mut text = p.text.into_owned();
        let (tail, again) = strip_unfinished(tail);
        text.extend_from_slice(trim_start(tail));
        if again {
            self.pending.insert(
                pid,
                Pending {
                    line: p.line,
                    text: Cow::Owned(text),
                    name_len: p.name_len,
                },
            );
            return Ok(());
        }
        if !complete {
            return Err(self.err("the log ends in the middle of a line".into()));
        }
        self.push_call(Call {
            pid,
            line: p.line,
            end_line: self.line_no,
            text: Cow::Owned(text),
            name_len: p.name_len,
            stack: Vec::new(),
        });
        Ok(())
    }

    /// A line starting a call: `name(args) = ret`, or `name(args
    /// <unfinished ...>`.
    fn call(&mut self, pid: u32, body: &'a [u8], complete: bool) -> Result<(), ParseError> {
        let name_len = body
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        if name_len == 0 || body.get(name_len) != Some(&b'(') {
            return Err(self.err(format!("not a strace line: `{}`", show(body))));
        }
        self.stats.calls += 1;
        let name = &body[..name_len];
        let keep = interesting(name);
        let (text, unfinished) = strip_unfinished(body);
        if unfinished {
            if self.pending.contains_key(&pid) {
                return Err(self.err(format!(
                    "process {pid} starts `{}` while another call of it is unfinished",
                    show(name)
                )));
            }
            if keep {
                let pending = Pending {
                    line: self.line_no,
                    text: Cow::Borrowed(text),
                    name_len,
                };
                self.pending.insert(pid, pending);
            } else {
                self.stats.skipped += 1;
            }
            return Ok(());
        }
        if !keep {
            self.stats.skipped += 1;
            return Ok(());
        }
        if !complete || memmem::rfind(body, b" = ").is_none() {
            return Err(self.err(format!(
                "`{}` has no return value (truncated log?)",
                show(name)
            )));
        }
        self.push_call(Call {
            pid,
            line: self.line_no,
            end_line: self.line_no,
            text: Cow::Borrowed(body),
            name_len,
            stack: Vec::new(),
        });
        Ok(())
    }

    /// A completed call; stack frames on the lines after it go to it.
    fn push_call(&mut self, call: Call<'a>) {
        self.events.push(Event::Call(call));
        self.last_call = Some(self.events.len() - 1);
    }

    /// The events, with the calls still unfinished at the end of the log
    /// (in the order they started).
    fn finish(mut self) -> Log<'a> {
        let mut left: Vec<_> = self.pending.into_iter().collect();
        left.sort_by_key(|(_, p)| p.line);
        for (pid, p) in left {
            self.events.push(p.into_unfinished(pid, self.line_no));
        }
        Log {
            events: self.events,
            stats: self.stats,
        }
    }
}

fn trim_start(mut s: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = s {
        s = rest;
    }
    s
}

/// Strips a trailing `<unfinished ...>` and reports whether it was there.
fn strip_unfinished(s: &[u8]) -> (&[u8], bool) {
    match s.strip_suffix(b"<unfinished ...>") {
        Some(rest) => (rest, true),
        None => match s.strip_suffix(b"<unfinished ...>)") {
            Some(rest) => (rest, true),
            None => (s, false),
        },
    }
}

/// Splits the pid column: `1234  name(...)` or `[pid  1234] name(...)`.
pub(crate) fn split_pid(line: &[u8]) -> (u32, &[u8]) {
    if let Some(rest) = line.strip_prefix(b"[pid") {
        let rest = trim_start(rest);
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if n > 0 && rest.get(n) == Some(&b']') {
            if let Some(pid) = std::str::from_utf8(&rest[..n])
                .ok()
                .and_then(|s| s.parse().ok())
            {
                return (pid, trim_start(&rest[n + 1..]));
            }
        }
        return (0, line);
    }
    let n = line.iter().take_while(|b| b.is_ascii_digit()).count();
    if n > 0 && line.get(n) == Some(&b' ') {
        if let Some(pid) = std::str::from_utf8(&line[..n])
            .ok()
            .and_then(|s| s.parse().ok())
        {
            return (pid, trim_start(&line[n..]));
        }
    }
    (0, line)
}

/// Skips a `-t`/`-tt`/`-ttt`/`-r` timestamp column if present.
fn skip_timestamp(body: &[u8]) -> &[u8] {
    let n = body
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b':' || **b == b'.')
        .count();
    if n > 0 && body.get(n) == Some(&b' ') {
        trim_start(&body[n..])
    } else {
        body
    }
}

/// The thread in `superseded by execve in pid N +++`, the record strace
/// writes for a thread group leader when another of its threads calls execve.
fn parse_superseded(s: &[u8]) -> Option<u32> {
    let n = s
        .strip_prefix(b"superseded by execve in pid ")?
        .strip_suffix(b" +++")?;
    std::str::from_utf8(n).ok()?.trim().parse().ok()
}

fn parse_exit(pid: u32, line: u32, s: &[u8]) -> Option<Exit> {
    let s = s.strip_suffix(b" +++")?;
    if let Some(code) = s.strip_prefix(b"exited with ") {
        let code = std::str::from_utf8(code).ok()?.trim().parse().ok()?;
        return Some(Exit {
            pid,
            line,
            code: Some(code),
            signal: None,
        });
    }
    let sig = s.strip_prefix(b"killed by ")?;
    let sig = sig.split(|&b| b == b' ').next()?;
    Some(Exit {
        pid,
        line,
        code: None,
        signal: Some(String::from_utf8_lossy(sig).into_owned()),
    })
}

/// Shows a piece of the log in an error message: at most 80 characters.
pub fn show(s: &[u8]) -> String {
    let text = String::from_utf8_lossy(s);
    let mut out: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;

    fn one(log: &str) -> Call<'_> {
        let parsed = parse_log(log.as_bytes()).unwrap();
        match parsed.events.into_iter().next().unwrap() {
            Event::Call(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn splits_a_simple_call() {
        let c =
            one("12  openat(AT_FDCWD<\\x2f>, \"\\x61\", O_WRONLY|O_CREAT, 0644) = 3<\\x2f\\x61>\n");
        assert_eq!(c.pid, 12);
        assert_eq!(c.name(), b"openat");
        let args = c.args();
        assert_eq!(args.len(), 4);
        assert_eq!(parse_int(args[0]), Some(AT_FDCWD));
        assert_eq!(decode_string(args[1]).unwrap().bytes, b"a");
        assert!(has_flag(args[2], b"O_CREAT"));
        assert!(!has_flag(args[2], b"O_TRUNC"));
        match c.ret() {
            Ret::Ok(3, Some(a)) => assert_eq!(decode_annotation(a).unwrap(), b"/a"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn joins_unfinished_and_resumed() {
        let log = "1  write(3, \"\\x61\", 1 <unfinished ...>\n2  fsync(4) = 0\n1  <... write resumed>) = 1\n";
        let parsed = parse_log(log.as_bytes()).unwrap();
        let calls: Vec<_> = parsed
            .events
            .iter()
            .map(|e| match e {
                Event::Call(c) => (c.name_str().to_string(), c.line, c.end_line),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            calls,
            vec![("fsync".to_string(), 2, 2), ("write".to_string(), 1, 3)]
        );
        let Event::Call(w) = &parsed.events[1] else {
            unreachable!()
        };
        assert_eq!(w.args().len(), 3);
        assert_eq!(w.ret(), Ret::Ok(1, None));
    }

    #[test]
    fn errors_and_unknown_returns() {
        let c = one("5 unlink(\"\\x61\") = -1 ENOENT (No such file or directory)\n");
        assert_eq!(c.ret(), Ret::Err(b"ENOENT"));
        let c = one("5 execve(\"\\x61\", [], 0x0 /* 3 vars */) = ?\n");
        assert_eq!(c.ret(), Ret::Unknown);
        let c = one("5 lseek(3, 0, SEEK_END)      = 0x10\n");
        assert_eq!(c.ret().ok(), Some(16));
    }

    #[test]
    fn decodes_escapes() {
        let d = decode_string(br#""a\n\x41\101\\\"""#).unwrap();
        assert_eq!(d.bytes, b"a\nAA\\\"");
        assert!(!d.truncated);
        let d = decode_string(br#""\x61\x62"..."#).unwrap();
        assert_eq!(d.bytes, b"ab");
        assert!(d.truncated);
        assert!(decode_string(b"NULL").is_none());
    }

    #[test]
    fn decodes_iovecs() {
        let d =
            decode_iovecs(br#"[{iov_base="\x61", iov_len=1}, {iov_base="\x62\x63", iov_len=2}]"#)
                .unwrap();
        assert_eq!(d.bytes, b"abc");
    }

    #[test]
    fn exits_and_bracketed_pids() {
        let log = "[pid  7] +++ killed by SIGKILL (core dumped) +++\n8 +++ exited with 3 +++\n";
        let parsed = parse_log(log.as_bytes()).unwrap();
        let exits: Vec<_> = parsed
            .events
            .iter()
            .map(|e| match e {
                Event::Exit(x) => (x.pid, x.code, x.signal.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            exits,
            vec![(7, None, Some("SIGKILL".into())), (8, Some(3), None)]
        );
    }

    #[test]
    fn an_execve_in_a_thread_resumes_under_the_leaders_id() {
        let log = "1  read(3, <unfinished ...>\n\
                   2  execve(\"\\x61\", [], 0x0 /* 0 vars */ <unfinished ...>\n\
                   1  <... read resumed> <unfinished ...>) = ?\n\
                   1  +++ superseded by execve in pid 2 +++\n\
                   1  <... execve resumed>) = 0\n\
                   1  +++ exited with 0 +++\n";
        let parsed = parse_log(log.as_bytes()).unwrap();
        let got: Vec<String> = parsed
            .events
            .iter()
            .map(|e| match e {
                Event::Call(c) => format!(
                    "{} {} {}-{} {:?}",
                    c.pid,
                    c.name_str(),
                    c.line,
                    c.end_line,
                    c.ret()
                ),
                Event::Exit(x) => format!("{} exit {} {:?} {:?}", x.pid, x.line, x.code, x.signal),
                Event::Unfinished(c) => format!("{} unfinished {}", c.pid, c.name_str()),
            })
            .collect();
        assert_eq!(
            got,
            [
                "1 read 1-3 Unknown",
                "2 exit 4 None None",
                "1 execve 2-5 Ok(0, None)",
                "1 exit 6 Some(0) None",
            ]
        );
    }

    #[test]
    fn rejects_garbage_with_a_line_number() {
        let e = parse_log(b"1 write(1, \"\\x61\", 1) = 1\nhello world\n").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_log(b"1 write(1, \"\\x61\", 1) = 1\n1 write(1, \"\\x6").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn comments_and_annotations_do_not_split() {
        let args =
            split_args(br#"3<\x2f\x61>, ["\x2c", "\x62"], 0x7ffd /* 35 vars */, {a=1, b=2}"#);
        assert_eq!(args.len(), 4);
    }
}
