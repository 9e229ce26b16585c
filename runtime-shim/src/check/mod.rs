//! Check mode (`ACCSHIM_CHECK=FILE`): the emulated device as a data-clause checker.
//!
//! On the emulated device the host copy and the device copy of an array are both host memory,
//! so every bug a discrete GPU would expose can be seen as it happens: a kernel changed the
//! device copy and the host reads its own (stale_host_read); the host changed its copy and a
//! kernel uses the device's (stale_device_read); a kernel's results are released without a
//! copy back and the host reads the old values (results_dropped); a kernel is handed a host
//! address (host_memory_in_kernel); data left mapped at exit (leak_at_exit); transfers whose
//! destination already held those bytes (redundant_transfer) or whose data nobody read before
//! it went back (unused_transfer).
//!
//! How: content comparisons between the two copies at the points where the runtime moves or
//! launches (in queue order, on the thread that runs the work: [`hooks`]), and page guards on
//! the host copies ([`guard`]) that see the program's first access to an array in a state that
//! matters: stale after a kernel (no access allowed), in sync (no write allowed), released (any
//! access noted). The first access is enough: each guard costs at most one fault, whatever
//! the program does after. Arrays that share pages are guarded together, each fault attributed
//! by its address, and an access that means nothing to the guards is let through for one
//! instruction (`step`). A kernel's first accesses to an upload (`upload_watch`) tell an
//! upload it overwrote before reading.
//!
//! What was found is written to FILE as JSON when the program exits ([`report`]), with source
//! lines from the program's debug information; `accprof check` names the arrays and prints it.

mod cpu;
pub mod guard;
pub mod hooks;
mod origin;
mod pages;
pub mod report;
pub mod signals;
mod state;
mod step;
mod upload_watch;

pub use hooks::on;

/// Starts checking if ACCSHIM_CHECK asks for it and the device is the emulated one: installs
/// the fault handler and notes which code is the program's. Says why in one line when it
/// cannot.
/// `in_kernel` tells whether the calling thread runs a kernel of the emulated device.
pub fn start(emulated: bool, in_kernel: fn() -> bool) {
    let Some(path) = std::env::var_os("ACCSHIM_CHECK").filter(|p| !p.is_empty()) else {
        return;
    };
    if !emulated {
        eprintln!("accshim: ACCSHIM_CHECK needs the emulated device (ACC_DEVICE_TYPE=emulated); not checking");
        return;
    }
    if !signals::install() {
        eprintln!("accshim: cannot install the checker's fault handler; not checking");
        return;
    }
    report::set_path(std::path::PathBuf::from(path));
    let (own, program) = report::code_ranges();
    if let Some((s, e)) = own {
        origin::set_own_text(s, e);
    }
    origin::set_program_text(&program);
    origin::set_kernel_probe(in_kernel);
    hooks::enable();
}
