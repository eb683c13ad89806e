//! Builds the library a workload is recorded with when syncs are taken out
//! of it (`src/omit_syncs.c`, preloaded: see `src/omit.rs`), with the C
//! compiler Rust links with, so that the binary carries it.

use std::path::PathBuf;

fn main() {
    let src = "src/omit_syncs.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let lib = out.join("libblackout_omit_syncs.so");
    let compiler = cc::Build::new().opt_level(2).get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-Wall", "-Werror", "-o"])
        .arg(&lib)
        .arg(src)
        .status()
        .expect("the C compiler runs");
    assert!(status.success(), "cannot build {src}");
}
