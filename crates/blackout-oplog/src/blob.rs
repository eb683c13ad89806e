//! The data blob: the bytes ops' [`DataRef`]s point into (written data,
//! printed output, the initial tree's files).
//!
//! A small blob is held in memory; a large one stays in its file and is read
//! by range (`pread`), so nothing holds a recording's data whole: neither a
//! trace loaded for a run nor the crash states built from it (their file
//! contents are extents naming ranges of the blob). Reading through a page-cache `pread` into a
//! transient buffer keeps the pages out of the process's resident memory,
//! where a touched memory map would count them.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::ops::DataRef;

/// Blobs up to this many bytes are read into memory when loaded; larger
/// ones are read by range from their file.
pub const BLOB_IN_MEMORY_BYTES_MAX: u64 = 64 << 20;

/// Bytes read from a file blob at a time when it is copied or compared.
const CHUNK_BYTES: usize = 1 << 20;

/// The bytes [`DataRef`]s point into; cloning shares them.
#[derive(Clone, Default)]
pub struct Blob {
    inner: Arc<Inner>,
    len: u64,
}

enum Inner {
    Mem(Vec<u8>),
    /// Bytes `start..` of a file (which may grow past this blob's length).
    File {
        file: File,
        start: u64,
    },
}

impl Default for Inner {
    fn default() -> Inner {
        Inner::Mem(Vec::new())
    }
}

impl Blob {
    /// A blob held in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Blob {
        Blob {
            len: bytes.len() as u64,
            inner: Arc::new(Inner::Mem(bytes)),
        }
    }

    /// The `len` bytes of `file` from `start`, read by range when asked for.
    pub fn from_file(file: File, start: u64, len: u64) -> Blob {
        Blob {
            inner: Arc::new(Inner::File { file, start }),
            len,
        }
    }

    /// An empty blob whose appends go to `file` (an empty temporary file:
    /// a recording's data as it is decoded, read back by range).
    pub fn to_file(file: File) -> Blob {
        Blob::from_file(file, 0, 0)
    }

    /// Appends `bytes`; where they now lie. Clones made before keep their
    /// length (and, in memory, their bytes).
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<DataRef> {
        let r = DataRef {
            start: self.len,
            len: bytes.len() as u64,
        };
        if let Inner::File { file, start } = &*self.inner {
            file.write_all_at(bytes, start + self.len)?;
        } else {
            if Arc::get_mut(&mut self.inner).is_none() {
                let copy = self.in_memory().unwrap_or_default().to_vec();
                self.inner = Arc::new(Inner::Mem(copy));
            }
            if let Some(Inner::Mem(v)) = Arc::get_mut(&mut self.inner) {
                v.truncate(self.len as usize);
                v.extend_from_slice(bytes);
            }
        }
        self.len += bytes.len() as u64;
        Ok(r)
    }

    /// Whether appends go to a file.
    pub fn is_file(&self) -> bool {
        matches!(&*self.inner, Inner::File { .. })
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes, when the blob is held in memory.
    pub fn in_memory(&self) -> Option<&[u8]> {
        match &*self.inner {
            Inner::Mem(v) => Some(&v[..self.len as usize]),
            Inner::File { .. } => None,
        }
    }

    /// Fills `buf` with the bytes at `off`.
    ///
    /// # Panics
    ///
    /// When the range lies past the blob (every [`DataRef`] of a trace was
    /// checked against its length when it was read), or when its file can no
    /// longer be read (it was cut short under the run).
    pub fn read_into(&self, off: u64, buf: &mut [u8]) {
        let end = off.checked_add(buf.len() as u64);
        assert!(
            end.is_some_and(|e| e <= self.len),
            "a read of {} bytes at {off} past a data blob of {} bytes",
            buf.len(),
            self.len
        );
        match &*self.inner {
            Inner::Mem(v) => buf.copy_from_slice(&v[off as usize..off as usize + buf.len()]),
            Inner::File { file, start } => {
                if let Err(e) = file.read_exact_at(buf, start + off) {
                    panic!("the trace's data can no longer be read ({e}): was its file changed?");
                }
            }
        }
    }

    /// The bytes `r` names: borrowed when in memory, else read.
    pub fn get(&self, r: DataRef) -> Cow<'_, [u8]> {
        match self.in_memory() {
            Some(v) => Cow::Borrowed(&v[r.start as usize..(r.start + r.len) as usize]),
            None => {
                let mut buf = vec![0u8; r.len as usize];
                self.read_into(r.start, &mut buf);
                Cow::Owned(buf)
            }
        }
    }

    /// Writes every byte to `w`, a chunk at a time.
    pub fn copy_to(&self, w: &mut impl Write) -> io::Result<()> {
        if let Some(v) = self.in_memory() {
            return w.write_all(v);
        }
        let mut buf = vec![0u8; CHUNK_BYTES.min(self.len as usize)];
        let mut off = 0;
        while off < self.len {
            let n = (self.len - off).min(CHUNK_BYTES as u64) as usize;
            self.read_into(off, &mut buf[..n]);
            w.write_all(&buf[..n])?;
            off += n as u64;
        }
        Ok(())
    }

    /// The same bytes held in memory when there are at most
    /// [`BLOB_IN_MEMORY_BYTES_MAX`] of them (faster to read by range), else
    /// this blob.
    pub fn small_in_memory(self) -> Blob {
        if self.in_memory().is_some() || self.len > BLOB_IN_MEMORY_BYTES_MAX {
            return self;
        }
        let mut v = vec![0u8; self.len as usize];
        self.read_into(0, &mut v);
        Blob::from_vec(v)
    }
}

/// Equal when they hold the same bytes.
impl PartialEq for Blob {
    fn eq(&self, other: &Blob) -> bool {
        if self.len != other.len {
            return false;
        }
        if let (Some(a), Some(b)) = (self.in_memory(), other.in_memory()) {
            return a == b;
        }
        let n = CHUNK_BYTES.min(self.len as usize);
        let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
        let mut off = 0;
        while off < self.len {
            let n = (self.len - off).min(CHUNK_BYTES as u64) as usize;
            self.read_into(off, &mut a[..n]);
            other.read_into(off, &mut b[..n]);
            if a[..n] != b[..n] {
                return false;
            }
            off += n as u64;
        }
        true
    }
}

impl Eq for Blob {}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match &*self.inner {
            Inner::Mem(_) => "memory",
            Inner::File { .. } => "file",
        };
        write!(f, "Blob({} bytes in {place})", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_blob_reads_what_was_appended_and_compares_by_bytes() {
        let mut blob = Blob::to_file(tempfile::tempfile().unwrap());
        let a = blob.append(b"hello ").unwrap();
        let early = blob.clone();
        let b = blob.append(b"world").unwrap();
        assert_eq!((early.len(), blob.len()), (6, 11));
        assert_eq!(&*blob.get(a), b"hello ");
        assert_eq!(&*blob.get(b), b"world");
        assert!(blob.is_file() && blob.in_memory().is_none());
        assert_eq!(blob, Blob::from_vec(b"hello world".to_vec()));
        assert_ne!(early, blob);
        let mut out = Vec::new();
        blob.copy_to(&mut out).unwrap();
        assert_eq!(out, b"hello world");
        assert_eq!(blob.clone().small_in_memory().in_memory(), Some(&out[..]));
    }

    #[test]
    fn a_memory_blob_shared_before_an_append_keeps_its_bytes() {
        let mut blob = Blob::default();
        blob.append(b"ab").unwrap();
        let early = blob.clone();
        blob.append(b"cd").unwrap();
        assert_eq!(early.in_memory(), Some(&b"ab"[..]));
        assert_eq!(blob.in_memory(), Some(&b"abcd"[..]));
    }

    #[test]
    #[should_panic(expected = "past a data blob")]
    fn a_read_past_the_end_panics() {
        Blob::from_vec(b"ab".to_vec()).read_into(1, &mut [0; 2]);
    }
}
