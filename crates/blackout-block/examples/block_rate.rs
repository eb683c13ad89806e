//! Measures the block recorder on this machine: small write+fsync
//! operations per second on a recorded ext4, records logged per second,
//! and how long rebuilding an image at a flush takes.
//!
//! `cargo run -p blackout-block --example block_rate [FS] [OPS]` (root).

use std::io::Write;
use std::time::Instant;

use blackout_block::log::RecordKind;
use blackout_block::recording::DeviceRecording;
use blackout_block::session::{DeviceSession, FsKind, SessionConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let fs: FsKind = args.next().as_deref().unwrap_or("ext4").parse()?;
    let ops: usize = args.next().map_or(Ok(1000), |n| n.parse())?;
    let mut config = SessionConfig::new(fs);
    config.size = config.size.max(2 * fs.min_size());
    let started = Instant::now();
    let mut session = DeviceSession::start(&config)?;
    let setup = started.elapsed();
    let before = session.position();
    let t = Instant::now();
    let mut f = std::fs::File::create(session.mount_path().join("log"))?;
    for i in 0..ops {
        writeln!(f, "record {i}")?;
        f.sync_data()?;
    }
    let took = t.elapsed().as_secs_f64();
    drop(f);
    let big = vec![0x5a_u8; 32 << 20];
    let t = Instant::now();
    let mut f = std::fs::File::create(session.mount_path().join("big"))?;
    f.write_all(&big)?;
    f.sync_all()?;
    drop(f);
    let mbps = 32.0 / t.elapsed().as_secs_f64();
    session.unmount()?;
    let log = session.log();
    let records = log.records.len() - before;
    let flushes = log.records[before..]
        .iter()
        .filter(|r| r.kind == RecordKind::Flush)
        .count();
    println!(
        "{fs}: session up in {setup:.2?}; base at record {}",
        session.base()
    );
    println!(
        "{ops} write+fdatasync ops in {took:.2} s: {:.0} ops/s, {records} records ({flushes} flushes), {:.0} records/s",
        ops as f64 / took,
        records as f64 / took
    );
    let count = |records: &[blackout_block::log::Record], label: &str| {
        records.iter().filter(|r| r.kind.label() == label).count()
    };
    let mkfs = &log.records[..session.base()];
    let largest = log
        .records
        .iter()
        .filter_map(|r| match r.kind {
            RecordKind::Write { len, .. } => Some(len),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    println!(
        "mkfs + mount + sync: {} writes, {} zeroed ranges, {} flushes; largest write {largest} bytes",
        count(mkfs, "write"),
        count(mkfs, "zero"),
        count(mkfs, "flush")
    );
    println!("32 MiB written and fsynced at {mbps:.0} MB/s");
    states(fs, &session.finish()?)
}

/// Times writing states at the recording's crash points, and mounting them.
fn states(fs: FsKind, recording: &DeviceRecording) -> Result<(), Box<dyn std::error::Error>> {
    let points = recording.crash_points();
    let dir = tempfile::tempdir_in(blackout_sys::scratch::default_scratch_parent())?;
    let sample: Vec<usize> = points
        .iter()
        .step_by((points.len() / 50).max(1))
        .map(|p| p.position)
        .collect();
    let t = Instant::now();
    for p in &sample {
        let out = dir.path().join("state.img");
        recording.replay_to(*p, &out)?;
        std::fs::remove_file(&out)?;
    }
    let from_base = t.elapsed() / sample.len().max(1) as u32;
    let t = Instant::now();
    let mut cursor = recording.cursor(&dir.path().join("work.img"))?;
    for p in &points {
        let out = dir.path().join("state.img");
        cursor.advance(p.position)?;
        cursor.write_image(&out)?;
        std::fs::remove_file(&out)?;
    }
    let carried = t.elapsed() / points.len().max(1) as u32;
    println!(
        "{} crash points (base, flushes, marks); an image written at one in {from_base:.2?} \
         rebuilt from the base (mean of {}), {carried:.2?} with a cursor carried through all",
        points.len(),
        sample.len()
    );
    let t = Instant::now();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt)?;
    let mut cursor = recording.cursor(&dir.path().join("work2.img"))?;
    for p in &sample {
        let out = dir.path().join("state.img");
        cursor.advance(*p)?;
        cursor.write_image(&out)?;
        mount_read_unmount(fs, &out, &mnt)?;
        std::fs::remove_file(&out)?;
    }
    let mounted = t.elapsed() / sample.len().max(1) as u32;
    println!(
        "a state written, mounted (recovery runs), listed and unmounted in {mounted:.2?} \
         (mean of {}): {:.0} states/s on one thread",
        sample.len(),
        1.0 / mounted.as_secs_f64()
    );
    Ok(())
}

/// Mounts `image` on `mnt` through a loop device of its own, reads the
/// root directory, unmounts (the loop device clears itself).
fn mount_read_unmount(
    fs: FsKind,
    image: &std::path::Path,
    mnt: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let opts = if fs == FsKind::Xfs {
        "loop,nouuid"
    } else {
        "loop"
    };
    let status = std::process::Command::new("mount")
        .args(["-t", fs.name(), "-o", opts])
        .arg(image)
        .arg(mnt)
        .status()?;
    if !status.success() {
        return Err(format!("mount {}: {status}", image.display()).into());
    }
    let entries = std::fs::read_dir(mnt).map(|d| d.count());
    let status = std::process::Command::new("umount").arg(mnt).status()?;
    entries?;
    if !status.success() {
        return Err(format!("umount {}: {status}", mnt.display()).into());
    }
    Ok(())
}
