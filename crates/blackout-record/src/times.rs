//! How long calls took: a log recorded with `-ttt -T` (each line's start
//! time, each call's time in the call) read into when each call returned
//! ([`call_times`]) and how long it took ([`call_durations`]).

use crate::strace::{parse_log, split_pid, trim, Event, ParseError};

/// When each call of a log recorded with `-ttt -T` returned: the start
/// line of every completed call (the line ops name) with the time it
/// returned, in seconds since the epoch (the timestamp of its start line
/// plus the time it took). Calls without both columns are left out.
///
/// # Examples
///
/// ```
/// let log = b"7 1700000000.250000 fsync(3</d/f>) = 0 <0.125000>\n";
/// let times = blackout_record::times::call_times(log).unwrap();
/// assert_eq!(times, [(1, 1700000000.375)]);
/// ```
pub fn call_times(log: &[u8]) -> Result<Vec<(u32, f64)>, ParseError> {
    Ok(timed_calls(log)?
        .into_iter()
        .map(|(line, start, took)| (line, start + took))
        .collect())
}

/// How long each call of a log recorded with `-ttt -T` took, by the line
/// it started on (strace's `-T` column: the time between entering the call
/// and its return, as the tracer saw them).
///
/// ```
/// let log = b"7 1700000000.250000 fsync(3</d/f>) = 0 <0.125000>\n";
/// let took = blackout_record::times::call_durations(log).unwrap();
/// assert_eq!(took, [(1, 0.125)]);
/// ```
pub fn call_durations(log: &[u8]) -> Result<Vec<(u32, f64)>, ParseError> {
    Ok(timed_calls(log)?
        .into_iter()
        .map(|(line, _, took)| (line, took))
        .collect())
}

/// Each completed call with both columns: its start line, when it
/// started, how long it took.
fn timed_calls(log: &[u8]) -> Result<Vec<(u32, f64, f64)>, ParseError> {
    let mut started: Vec<Option<f64>> = vec![None];
    for line in log.split(|&b| b == b'\n') {
        let (_, body) = split_pid(line);
        let n = body
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'.')
            .count();
        let stamp = std::str::from_utf8(&body[..n]).ok();
        started.push(stamp.and_then(|t| t.parse().ok()));
    }
    let parsed = parse_log(log)?;
    let mut times = Vec::new();
    for event in &parsed.events {
        let Event::Call(call) = event else { continue };
        let start = started.get(call.line as usize).copied().flatten();
        if let (Some(start), Some(took)) = (start, call_duration(&call.text)) {
            times.push((call.line, start, took));
        }
    }
    Ok(times)
}

/// The `<0.000123>` column `-T` puts after a call's return value.
fn call_duration(text: &[u8]) -> Option<f64> {
    let text = trim(text);
    let inner = text.strip_suffix(b">")?;
    let open = memchr::memrchr(b'<', inner)?;
    if open == 0 || inner[open - 1] != b' ' {
        return None;
    }
    let secs = &inner[open + 1..];
    if secs.is_empty() || !secs.iter().all(|b| b.is_ascii_digit() || *b == b'.') {
        return None;
    }
    std::str::from_utf8(secs).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_times_are_start_plus_duration_also_for_split_calls() {
        let log = b"5 1.000000 fsync(3</d/f> <unfinished ...>\n\
                    6 1.100000 write(1</o>, \"x\", 1) = 1 <0.000010>\n\
                    5 1.500000 <... fsync resumed>) = 0 <0.400000>\n\
                    6 1.600000 close(1</o>) = 0\n";
        let times = call_times(log).unwrap();
        let lines: Vec<u32> = times.iter().map(|t| t.0).collect();
        assert_eq!(
            lines,
            [2, 1],
            "in completion order; a call without -T is left out"
        );
        assert!((times[0].1 - 1.10001).abs() < 1e-9);
        assert!((times[1].1 - 1.4).abs() < 1e-9);
        assert_eq!(call_duration(b"openat(AT_FDCWD, \"x\") = 3</d/x>"), None);
        assert_eq!(
            call_duration(b"openat(AT_FDCWD, \"x\") = 3</d/x> <0.5>"),
            Some(0.5)
        );
    }
}
