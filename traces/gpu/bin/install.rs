//! Puts the committed GCC programs where they ran on the GPU machine, /tmp/accprof-gpu-bin, so
//! that their debug information and symbol table name the constructs' lines and arrays when a
//! test reads a trace of traces/gpu/. Shared by the tests of accprof-cli and accprof-tui
//! (`#[path = ...] mod`), which run side by side in several processes and threads.

use std::path::PathBuf;

/// Installs every program of traces/gpu/bin whose copy in /tmp/accprof-gpu-bin differs.
pub fn install_gcc_binaries() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../traces/gpu/bin");
    let dst = PathBuf::from("/tmp/accprof-gpu-bin");
    std::fs::create_dir_all(&dst).unwrap();
    for exe in [
        "gcc_laplace_naive",
        "gcc_laplace_data",
        "gcc_laplace_heap",
        "gcc_geometry",
    ] {
        let (from, to) = (src.join(exe), dst.join(exe));
        if std::fs::read(&to).ok() != std::fs::read(&from).ok() {
            // Written under a name of its own and renamed into place: a test running beside
            // this one never sees half a file, and two writers never share the temporary.
            let tmp = tempfile::NamedTempFile::new_in(&dst).unwrap();
            std::fs::copy(&from, tmp.path()).unwrap();
            tmp.persist(&to).unwrap();
        }
    }
}
