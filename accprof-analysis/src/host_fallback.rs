//! Whether a run's constructs all ran on the host: the runtime's host fallback (no GPU, or a
//! program built without an offload compiler). Such a run moves no data and launches nothing on a
//! device, so its report must say so rather than look like a GPU run with nothing in it, and its
//! timings say nothing about overlapping host and device work.

use crate::model::{ConstructKind, Profile};
use accprof_abi::acc_device_t;

/// True when the run has compute constructs and every one ran on the host: the runtime said
/// `acc_device_host`, or (GCC, which names no device on a fallback) nothing was launched or
/// transferred at all.
pub fn ran_on_host(p: &Profile) -> bool {
    let mut compute = p
        .constructs
        .iter()
        .filter(|c| c.kind == ConstructKind::Compute)
        .peekable();
    if compute.peek().is_none() {
        return false;
    }
    let all_host = compute.all(|c| c.location.device_type == Some(i64::from(acc_device_t::HOST.0)));
    let s = &p.summary;
    let nothing_on_a_device = s.kernels.count == 0
        && s.uploads.count == 0
        && s.downloads.count == 0
        && s.device_records == 0;
    all_host || nothing_on_a_device
}

/// The one line the report and advice print for a host-fallback run.
pub const EXPLANATION: &str = "every construct ran on the host (the runtime's host fallback: no GPU, or built without an offload compiler): the host shares the program's memory, so no data transfer happens and none is shown; `accprof run --runtime shim` runs the same binary on an emulated discrete device and shows the transfers a GPU would make";

/// `acc_device_t` 3: GCC's `acc_device_host_nonshm`, which the bundled runtime reports for its
/// emulated device (separate memory on the host).
pub const EMULATED_DEVICE_TYPE: i64 = 3;

/// True when the run's compute constructs ran on the bundled runtime's emulated device: kernels
/// run inside their launch call on host threads, and transfers copy between host buffers. Its
/// times are not a GPU's.
pub fn ran_on_emulated_device(p: &Profile) -> bool {
    p.summary.device_records == 0
        && p.constructs
            .iter()
            .any(|c| c.kind == ConstructKind::Compute)
        && p.constructs
            .iter()
            .filter(|c| c.kind == ConstructKind::Compute)
            .all(|c| c.location.device_type == Some(EMULATED_DEVICE_TYPE))
}
