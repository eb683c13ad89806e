//! Where in the program an op was issued: the stack frames a recorder saw
//! with a call, and the origin resolved from them (the function and, where
//! debug information exists, the source line). Data only: recorders parse
//! and resolve frames; reports show origins.

use serde::{Deserialize, Serialize};

/// One frame as strace printed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The object (executable or shared library).
    pub object: String,
    /// The nearest symbol, as strace named it.
    pub symbol: Option<String>,
    /// The return address, as an offset in the object's file.
    pub offset: u64,
}

/// Where an op was issued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The function (demangled), if known.
    pub function: Option<String>,
    /// The source file, where debug information exists.
    pub file: Option<String>,
    /// The source line.
    pub line: Option<u32>,
    /// The object the frame is in.
    pub object: String,
}

impl Origin {
    /// `save at p.c:4` or `save in /usr/bin/prog`.
    pub fn describe(&self) -> String {
        let func = self.function.as_deref().unwrap_or("?");
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{func} at {f}:{l}"),
            (Some(f), None) => format!("{func} in {f}"),
            _ => format!("{func} in {}", self.object),
        }
    }
}
