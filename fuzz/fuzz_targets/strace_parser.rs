//! The strace log parser on arbitrary bytes: an error, never a panic; and
//! every argument of every call it accepts can be split and decoded.
#![no_main]

use blackout_record::strace::{decode_string, parse_log, Event};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(log) = parse_log(data) {
        for ev in &log.events {
            if let Event::Call(c) | Event::Unfinished(c) = ev {
                let _ = c.ret();
                for a in c.args() {
                    let _ = decode_string(a);
                }
            }
        }
    }
});
