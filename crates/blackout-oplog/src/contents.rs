//! File contents as both the replay model and crash states hold them: the
//! bytes written so far (`data`) and the size; bytes past `data` up to `size`
//! read as zeros, so growing a file by truncate or fallocate allocates nothing.

/// Writes `bytes` at `off`, growing the file as needed.
pub fn write(data: &mut Vec<u8>, size: &mut u64, off: u64, bytes: &[u8]) {
    let end = off as usize + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[off as usize..end].copy_from_slice(bytes);
    *size = (*size).max(end as u64);
}

/// Sets the size.
pub fn truncate(data: &mut Vec<u8>, size: &mut u64, new_size: u64) {
    if data.len() as u64 > new_size {
        data.truncate(new_size as usize);
    }
    *size = new_size;
}

/// Applies what a reader sees of an fallocate: zeroes `[off, off+len)` when
/// `zero`, and grows the size to `off+len` unless `keep_size`.
pub fn fallocate(data: &mut [u8], size: &mut u64, off: u64, len: u64, zero: bool, keep_size: bool) {
    let end = off.saturating_add(len);
    if zero {
        let stop = end.min(data.len() as u64) as usize;
        if (off as usize) < stop {
            data[off as usize..stop].fill(0);
        }
    }
    if !keep_size && end > *size {
        *size = end;
    }
}

/// The `len` bytes at `off` (zeros past what was written).
pub fn read(data: &[u8], off: u64, len: u64) -> Vec<u8> {
    let mut out = vec![0u8; len as usize];
    let have = data.len() as u64;
    if off < have {
        let end = (off + len).min(have);
        out[..(end - off) as usize].copy_from_slice(&data[off as usize..end as usize]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_growth_reads_as_zeros() {
        let (mut d, mut s) = (Vec::new(), 0);
        write(&mut d, &mut s, 2, b"ab");
        assert_eq!((d.as_slice(), s), (&b"\0\0ab"[..], 4));
        truncate(&mut d, &mut s, 10);
        assert_eq!(d.len(), 4);
        assert_eq!(read(&d, 2, 4), b"ab\0\0");
        fallocate(&mut d, &mut s, 0, 3, true, true);
        assert_eq!((d.as_slice(), s), (&b"\0\0\0b"[..], 10));
        fallocate(&mut d, &mut s, 8, 8, false, false);
        assert_eq!(s, 16);
        truncate(&mut d, &mut s, 1);
        assert_eq!((d.len(), s), (1, 1));
    }
}
