//! A slice's title: the one rule every view names an OpenACC event by, "upload 8 MiB A",
//! "alloc 4 KiB B", "parallel", "enter data (data region)", a launch by its kernel's name.
//!
//! The title says what happened and to what; where in the source it happened is left to each
//! view (the exports add `file:line` to constructs, the TUI to every bar), as are device
//! records, whose words come from CUDA's tools ([`crate::device`]).

use crate::compact::CompactEvent;
use crate::format::bytes_compact;
use accprof_abi::{acc_construct_t, acc_event_t};
use accprof_trace::{device, nvtx};
use std::fmt;

/// The title of one slice, written by its [`fmt::Display`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Title<'a> {
    pub kind: acc_event_t,
    /// The construct the event belongs to (`parent_construct`).
    pub construct: Option<acc_construct_t>,
    /// Bytes moved, allocated or freed; stated only for the kinds of [`states_size`].
    pub bytes: Option<u64>,
    /// The variable of a data event, the kernel of a launch, the message of an NVTX range.
    pub name: Option<&'a str>,
}

impl<'a> Title<'a> {
    /// The title of `s`, whose name string (`s.name_id()`) resolves to `name`.
    pub fn of(s: &CompactEvent, name: Option<&'a str>) -> Self {
        Title {
            kind: s.event(),
            construct: s.construct(),
            bytes: s.bytes(),
            name,
        }
    }
}

impl fmt::Display for Title<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Launches and the program's NVTX ranges are named as the program named them.
        if self.kind == acc_event_t::ENQUEUE_LAUNCH_START || nvtx::is_nvtx(self.kind) {
            if let Some(name) = self.name {
                return f.write_str(name);
            }
        }
        let Some(word) = defined_word(self.kind, self.construct) else {
            // An event no view names otherwise: by its name in the specification, or by its
            // number where the specification does not define it.
            return match self.kind.name() {
                Some(name) => f.write_str(name),
                None => write!(f, "unknown event {}", self.kind.0),
            };
        };
        f.write_str(word)?;
        // Data movement and device memory state their size, as device copies do: the size is
        // what a user reads first, and a name that states it spares a `bytes` argument.
        if states_size(self.kind) {
            if let Some(b) = self.bytes {
                write!(f, " {}", bytes_compact(b))?;
            }
        }
        // Enter/exit data events also mark the edges of data regions and compute constructs.
        if matches!(
            self.kind,
            acc_event_t::ENTER_DATA_START | acc_event_t::EXIT_DATA_START
        ) {
            if let Some(c) = self
                .construct
                .filter(|c| !matches!(*c, acc_construct_t::ENTER_DATA | acc_construct_t::EXIT_DATA))
            {
                let what = if c == acc_construct_t::DATA {
                    "data region"
                } else {
                    construct_word(c)
                };
                write!(f, " ({what})")?;
            }
        }
        match self.name {
            Some(name) => write!(f, " {name}"),
            None => Ok(()),
        }
    }
}

/// What an event is, in a word or two: `upload`, `alloc`, `parallel` (a compute construct by
/// its construct), `enter data`, `kernel` (an unnamed launch), `NVTX mark`; an event number
/// the specification does not define reads `unknown event`.
pub fn kind_word(kind: acc_event_t, construct: Option<acc_construct_t>) -> &'static str {
    defined_word(kind, construct).unwrap_or_else(|| kind.name().unwrap_or("unknown event"))
}

/// [`kind_word`] of the kinds a title is built for; `None` for the rest (end events, device
/// records, numbers the specification does not define).
fn defined_word(kind: acc_event_t, construct: Option<acc_construct_t>) -> Option<&'static str> {
    Some(match kind {
        acc_event_t::COMPUTE_CONSTRUCT_START => construct.map_or("compute", construct_word),
        acc_event_t::ENTER_DATA_START => "enter data",
        acc_event_t::EXIT_DATA_START => "exit data",
        acc_event_t::UPDATE_START => "update",
        acc_event_t::WAIT_START => "wait",
        acc_event_t::DEVICE_INIT_START => "device init",
        acc_event_t::DEVICE_SHUTDOWN_START => "device shutdown",
        acc_event_t::RUNTIME_SHUTDOWN => "runtime shutdown",
        acc_event_t::ENQUEUE_UPLOAD_START => "upload",
        acc_event_t::ENQUEUE_DOWNLOAD_START => "download",
        acc_event_t::ENQUEUE_LAUNCH_START => "kernel",
        acc_event_t::CREATE => "create",
        acc_event_t::DELETE => "delete",
        acc_event_t::ALLOC => "alloc",
        acc_event_t::FREE => "free",
        nvtx::MARK => "NVTX mark",
        other if nvtx::is_nvtx(other) => "NVTX range",
        _ => return None,
    })
}

/// Whether a slice of this kind states its bytes in its title: host transfers, the
/// allocations, creations, deletions and frees of device memory, and device copies.
pub fn states_size(kind: acc_event_t) -> bool {
    matches!(
        kind,
        acc_event_t::ENQUEUE_UPLOAD_START
            | acc_event_t::ENQUEUE_DOWNLOAD_START
            | acc_event_t::CREATE
            | acc_event_t::DELETE
            | acc_event_t::ALLOC
            | acc_event_t::FREE
            | device::MEMCPY
    )
}

/// "parallel", "kernels", "data"... from `acc_construct_parallel`.
pub fn construct_word(c: acc_construct_t) -> &'static str {
    c.name()
        .map_or("construct", |n| {
            n.strip_prefix("acc_construct_").unwrap_or(n)
        })
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title(
        kind: acc_event_t,
        construct: Option<acc_construct_t>,
        bytes: Option<u64>,
        name: Option<&str>,
    ) -> String {
        Title {
            kind,
            construct,
            bytes,
            name,
        }
        .to_string()
    }

    #[test]
    fn a_transfer_states_its_direction_size_and_variable() {
        let up = acc_event_t::ENQUEUE_UPLOAD_START;
        assert_eq!(
            title(up, Some(acc_construct_t::DATA), Some(8 << 20), Some("A")),
            "upload 8 MiB A"
        );
        let down = acc_event_t::ENQUEUE_DOWNLOAD_START;
        assert_eq!(
            title(down, None, Some(1536), Some("B")),
            "download 1.5 KiB B"
        );
        // A size the runtime did not give is left out, not shown as 0.
        assert_eq!(title(up, None, None, Some("A")), "upload A");
    }

    #[test]
    fn an_allocation_states_its_size_and_variable() {
        assert_eq!(
            title(acc_event_t::ALLOC, None, Some(4096), Some("Anew")),
            "alloc 4 KiB Anew"
        );
        assert_eq!(title(acc_event_t::FREE, None, Some(12), None), "free 12 B");
    }

    #[test]
    fn a_launch_is_named_by_its_kernel() {
        let launch = acc_event_t::ENQUEUE_LAUNCH_START;
        let parallel = Some(acc_construct_t::PARALLEL);
        assert_eq!(
            title(launch, parallel, None, Some("main$_omp_fn$0")),
            "main$_omp_fn$0"
        );
        assert_eq!(title(launch, parallel, None, None), "kernel");
    }

    #[test]
    fn a_compute_construct_is_named_by_its_construct() {
        let compute = acc_event_t::COMPUTE_CONSTRUCT_START;
        for (c, word) in [
            (acc_construct_t::PARALLEL, "parallel"),
            (acc_construct_t::KERNELS, "kernels"),
            (acc_construct_t::SERIAL, "serial"),
        ] {
            assert_eq!(title(compute, Some(c), None, None), word);
        }
        // A runtime that does not say which construct: what it is, not a guess.
        assert_eq!(title(compute, None, None, None), "compute");
    }

    #[test]
    fn data_directives_say_which_construct_they_open_or_close() {
        let enter = acc_event_t::ENTER_DATA_START;
        let exit = acc_event_t::EXIT_DATA_START;
        assert_eq!(
            title(enter, Some(acc_construct_t::DATA), None, None),
            "enter data (data region)"
        );
        assert_eq!(
            title(exit, Some(acc_construct_t::PARALLEL), None, None),
            "exit data (parallel)"
        );
        assert_eq!(
            title(enter, Some(acc_construct_t::ENTER_DATA), None, None),
            "enter data"
        );
    }

    #[test]
    fn nvtx_ranges_and_undefined_numbers_read_as_what_they_are() {
        assert_eq!(title(nvtx::RANGE, None, None, Some("solve")), "solve");
        assert_eq!(title(nvtx::MARK, None, None, None), "NVTX mark");
        assert_eq!(title(nvtx::RANGE, None, None, None), "NVTX range");
        assert_eq!(
            title(acc_event_t(999), None, None, None),
            "unknown event 999"
        );
    }
}
