//! The process's memory: what it frees goes back to the system.

/// The size from which an allocation is a mapping of its own (glibc's
/// default starting threshold).
pub const MAPPED_FROM_BYTES: i32 = 128 * 1024;

/// Makes every allocation of [`MAPPED_FROM_BYTES`] or more a mapping of
/// its own, returned to the system when freed. glibc otherwise raises that
/// threshold to the size of each mapped block freed (up to 32 MiB), after
/// which the hash tables exploration grows and drops are carved from the
/// heap, and what they leave free stays resident: writing 1 GiB in 1 MiB
/// writes held 150–200 MB resident for about 100 MB in use, 112–124 MB with
/// the threshold fixed. Call it first thing in `main`, before any thread
/// starts. Other C libraries: nothing.
pub fn map_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called before any
    // other thread exists, nothing allocates concurrently.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_FROM_BYTES);
    }
}
