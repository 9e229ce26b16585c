//! Settings from the environment, read once when recording starts.
//!
//! | variable | meaning |
//! |---|---|
//! | ACCPROF_OUT | trace file, or directory to put it in; `%p` is replaced by the pid, `%r` by the MPI rank, `%h` by the host name. Default `accprof.<exe>.<pid>.trace` in the working directory |
//! | ACCPROF_QUIET=1 | print nothing at exit |
//! | ACCPROF_REPORT=1 / =FILE | print the text report to stderr at exit / write it to FILE |
//! | ACCPROF_BUFFER_EVENTS | events per thread buffer at the typical packed size of 128 bytes (default 4096) |
//! | ACCPROF_MAX_BUFFER_MB | memory for buffers waiting to be written, all threads (default 64) |
//! | ACCPROF_MAX_WAIT_MS | how long a thread may wait for a free buffer before it drops events (default 100) |
//! | ACCPROF_CUPTI=auto/on/off | record device activity through CUPTI when it loads (auto, default), insist and say why not (on), or never (off) |
//! | ACCPROF_CUPTI_LIB | path of libcupti, when it is in none of the usual places |
//! | ACCPROF_CUDA_EVENTS=auto/on/off | time launches and copies with CUDA events on the runtime's streams when CUPTI is not recording (auto, default), also beside CUPTI and say why not (on), or never (off) |
//! | ACCPROF_CUDA_LIB | path of the CUDA driver library (default `libcuda.so.1`) |
//! | ACCPROF_HEAP=auto/on/off | name transfers of heap memory by the allocation's file:line: record blocks from malloc, calloc, realloc, posix_memalign, ... when libaccprof is LD_PRELOADed (auto, default), say why not when it cannot (on), or never (off). Read when the library loads |
//! | ACCPROF_SELF_TIME=1 | print at exit how long the application's threads spent inside accprof (OpenACC callbacks, CUPTI's driver callbacks): the tool's own overhead, measured directly |
//! | ACCPROF_HEAP_MIN_BYTES | the smallest block recorded (default 65536); smaller ones cost two instructions and get no name |

use std::path::PathBuf;

/// Words a packed event typically takes (header and a dozen fields), for sizing buffers.
const TYPICAL_PACKED_WORDS: usize = 16;

#[derive(Clone, Debug)]
pub struct Config {
    pub out: Option<String>,
    pub quiet: bool,
    pub report: Option<ReportTarget>,
    /// Words (u64) per thread buffer.
    pub buffer_words: usize,
    pub max_buffers: usize,
    pub max_wait_ms: u64,
    pub cupti: Switch,
    pub cuda_events: Switch,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportTarget {
    Stderr,
    File(PathBuf),
}

impl Config {
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let num = |k: &str, default: u64| {
            var(k)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        let buffer_events = num("ACCPROF_BUFFER_EVENTS", 4096).clamp(16, 1 << 20) as usize;
        // Buffers hold packed events (accprof_trace::packed): only the fields a runtime set.
        let buffer_words = buffer_events * TYPICAL_PACKED_WORDS;
        let max_bytes = num("ACCPROF_MAX_BUFFER_MB", 64).clamp(1, 1 << 16) << 20;
        let max_buffers = ((max_bytes as usize) / (buffer_words * 8)).max(4);
        let report = var("ACCPROF_REPORT").and_then(|v| match v.as_str() {
            "0" | "no" | "off" | "false" => None,
            "1" | "yes" | "on" | "true" | "stderr" => Some(ReportTarget::Stderr),
            path => Some(ReportTarget::File(PathBuf::from(path))),
        });
        Config {
            out: var("ACCPROF_OUT"),
            quiet: var("ACCPROF_QUIET").is_some_and(|v| v != "0"),
            report,
            buffer_words,
            max_buffers,
            max_wait_ms: num("ACCPROF_MAX_WAIT_MS", 100),
            cupti: Switch::parse(var("ACCPROF_CUPTI").as_deref()),
            cuda_events: Switch::parse(var("ACCPROF_CUDA_EVENTS").as_deref()),
        }
    }
}

/// Heap naming settings. Read by the library's constructor, before recording starts (blocks are
/// allocated long before the first OpenACC event), so kept apart from [`Config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapConfig {
    pub mode: Switch,
    pub min_bytes: usize,
}

/// Default of ACCPROF_HEAP_MIN_BYTES: arrays worth naming in a transfer are larger, and blocks
/// this large are rare enough that walking the stack for each costs nothing measurable.
pub const HEAP_MIN_BYTES_DEFAULT: usize = 64 << 10;

impl HeapConfig {
    pub fn from_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let min_bytes = var("ACCPROF_HEAP_MIN_BYTES")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(HEAP_MIN_BYTES_DEFAULT)
            .max(1);
        HeapConfig {
            mode: Switch::parse(var("ACCPROF_HEAP").as_deref()),
            min_bytes,
        }
    }
}

/// An `auto`/`on`/`off` setting (ACCPROF_CUPTI, ACCPROF_CUDA_EVENTS, ACCPROF_HEAP). What `auto` means is the
/// setting's own (see the table above); `on` insists and says in one line why it cannot.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Switch {
    #[default]
    Auto,
    On,
    Off,
}

impl Switch {
    pub fn parse(v: Option<&str>) -> Self {
        match v.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("on" | "1" | "yes" | "true") => Switch::On,
            Some("off" | "0" | "no" | "false") => Switch::Off,
            _ => Switch::Auto,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_parses_the_usual_spellings() {
        assert_eq!(Switch::parse(None), Switch::Auto);
        assert_eq!(Switch::parse(Some("auto")), Switch::Auto);
        assert_eq!(Switch::parse(Some("banana")), Switch::Auto);
        for on in ["on", "ON", " 1 ", "yes", "true"] {
            assert_eq!(Switch::parse(Some(on)), Switch::On, "{on}");
        }
        for off in ["off", "0", "no", "false"] {
            assert_eq!(Switch::parse(Some(off)), Switch::Off, "{off}");
        }
    }
}
