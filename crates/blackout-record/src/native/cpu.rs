//! The tracer and its workload on one CPU.
//!
//! Every traced call stops the workload and wakes the tracer; when the
//! two run on different CPUs, each wake is an interrupt to the other CPU,
//! and on a virtual machine that costs several times the stop itself
//! (docs/PERFORMANCE.md: about 55 µs a stop across two CPUs here, 13 µs
//! on one). So the tracing thread pins itself to the CPU it runs on
//! before it forks the workload, which inherits the pin, and lets go when
//! the recording ends. The workload's threads and processes still run
//! concurrently, time-sliced on that CPU; what they do and in which order
//! the tracer sees it does not depend on it.

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

/// The calling thread pinned to one CPU until this is dropped.
pub(super) struct Pinned {
    /// The CPUs the thread could run on before.
    before: Option<CpuSet>,
}

impl Pinned {
    /// Pins the calling thread to the CPU it runs on now. Where that
    /// cannot be done (a restricted affinity call, an odd kernel) the
    /// recording runs unpinned: slower, not different.
    pub(super) fn here() -> Pinned {
        let this = Pid::from_raw(0);
        let Ok(before) = sched_getaffinity(this) else {
            return Pinned { before: None };
        };
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        let mut one = CpuSet::new();
        let pinned = usize::try_from(cpu)
            .ok()
            .filter(|&c| before.is_set(c).unwrap_or(false))
            .is_some_and(|c| one.set(c).is_ok() && sched_setaffinity(this, &one).is_ok());
        Pinned {
            before: pinned.then_some(before),
        }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(before) = &self.before {
            let _ = sched_setaffinity(Pid::from_raw(0), before);
        }
    }
}
