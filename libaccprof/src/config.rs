//! Settings from the environment, read once when recording starts.
//!
//! | variable | meaning |
//! |---|---|
//! | ACCPROF_OUT | trace file, or directory to put it in; `%p` is replaced by the pid, `%r` by the MPI rank, `%h` by the host name. Default `accprof.<exe>.<pid>.trace` in the working directory. Always created new: a taken name (a file, a link) gives `NAME.1.trace`, ... |
//! | ACCPROF_QUIET=1 | print nothing at exit |
//! | ACCPROF_DISABLE=1 | load but register with no runtime, record nothing (read at load and at registration) |
//! | ACCPROF_CLOCK=monotonic | read CLOCK_MONOTONIC in every callback instead of the TSC (`auto`, default: the TSC when it is the system's clock source) |
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
//! | ACCPROF_SYMBOLS=on/off | at a normal exit, resolve the trace's call sites and variables from the binaries and keep them in the trace (on, default), so that its lines outlive a rebuild; or leave that to `accprof symbolize` (off) |
//! | ACCPROF_HEAP_MIN_BYTES | the smallest block recorded (default 65536); smaller ones cost two instructions and get no name |
//! | ACCPROF_CONTENT=on/off | hash the host bytes of every transfer (off, default: it reads each transfer's bytes once more, about what the copy costs), so the advice can say which uploads carried bytes the device already held and choose copyin, copyout, copy or create per array |
//!
//! Every yes/no setting (ACCPROF_QUIET, ACCPROF_DISABLE, ACCPROF_SELF_TIME, and the `on`/`off`
//! of the auto/on/off ones) takes the same spellings, in any case: `1`, `on`, `yes`, `true` and
//! `0`, `off`, `no`, `false`. Empty is the same as unset. Anything else is said once, with the
//! value, and the default is used.

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
    /// Keep source lines and names in the trace at exit (ACCPROF_SYMBOLS).
    pub symbols: bool,
    /// Hash the bytes of every transfer (ACCPROF_CONTENT).
    pub content: bool,
    /// One line per setting that could not be used, said once when recording starts.
    pub problems: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportTarget {
    Stderr,
    File(PathBuf),
}

/// Reads ACCPROF_* variables, collecting one line for each value that cannot be used, naming
/// the variable and what is used instead.
#[derive(Default)]
struct Env {
    problems: Vec<String>,
}

impl Env {
    fn var(&self, k: &str) -> Option<String> {
        std::env::var(k).ok().filter(|v| !v.is_empty())
    }

    /// A whole number in `min..=max`; `default` when unset.
    fn num(&mut self, k: &str, default: u64, min: u64, max: u64) -> u64 {
        let Some(v) = self.var(k) else { return default };
        match v.trim().parse::<u64>() {
            Ok(n) if n < min => {
                self.problems.push(format!(
                    "{k}={v} is below the smallest value, {min}; using {min}"
                ));
                min
            }
            Ok(n) if n > max => {
                self.problems.push(format!(
                    "{k}={v} is above the largest value, {max}; using {max}"
                ));
                max
            }
            Ok(n) => n,
            Err(_) => {
                self.problems.push(format!(
                    "{k}={v} is not a whole number; using the default, {default}"
                ));
                default
            }
        }
    }

    /// A yes/no setting ([`flag`]); `default` when unset or unusable (said).
    fn flag(&mut self, k: &str, default: bool) -> bool {
        let v = self.var(k);
        match flag(v.as_deref()) {
            Some(b) => b.unwrap_or(default),
            None => {
                self.problems.push(format!(
                    "{k}={} is not 1 or 0 (on/off, yes/no, true/false); using {}",
                    v.unwrap_or_default(),
                    u8::from(default)
                ));
                default
            }
        }
    }

    fn switch(&mut self, k: &str) -> Switch {
        let v = self.var(k);
        match Switch::parse_strict(v.as_deref()) {
            Some(s) => s,
            None => {
                self.problems.push(format!(
                    "{k}={} is not auto, on or off; using auto",
                    v.unwrap_or_default()
                ));
                Switch::Auto
            }
        }
    }
}

impl Config {
    /// The settings; values that cannot be used are replaced and listed in `problems`, which
    /// the caller says once.
    pub fn from_env() -> Self {
        let mut env = Env::default();
        let buffer_events = env.num("ACCPROF_BUFFER_EVENTS", 4096, 16, 1 << 20) as usize;
        // Buffers hold packed events (accprof_trace::packed): only the fields a runtime set.
        let buffer_words = buffer_events * TYPICAL_PACKED_WORDS;
        let max_bytes = env.num("ACCPROF_MAX_BUFFER_MB", 64, 1, 1 << 16) << 20;
        let max_buffers = ((max_bytes as usize) / (buffer_words * 8)).max(4);
        let report = env
            .var("ACCPROF_REPORT")
            .and_then(|v| match flag(Some(&v)) {
                Some(Some(false)) => None,
                Some(Some(true)) => Some(ReportTarget::Stderr),
                _ if v.trim().eq_ignore_ascii_case("stderr") => Some(ReportTarget::Stderr),
                _ => Some(ReportTarget::File(PathBuf::from(v))),
            });
        let max_wait_ms = env.num("ACCPROF_MAX_WAIT_MS", 100, 0, 60_000);
        let cupti = env.switch("ACCPROF_CUPTI");
        let cuda_events = env.switch("ACCPROF_CUDA_EVENTS");
        let symbols = env.switch("ACCPROF_SYMBOLS") != Switch::Off;
        // Read where they act (the clock and the callbacks decide before this runs); checked
        // here so that an unusable value is said once, with the others.
        env.flag("ACCPROF_SELF_TIME", false);
        if clock_setting().is_none() {
            env.problems.push(format!(
                "ACCPROF_CLOCK={} is not monotonic or auto; using auto",
                env.var("ACCPROF_CLOCK").unwrap_or_default()
            ));
        }
        let content = env.switch("ACCPROF_CONTENT") == Switch::On;
        Config {
            out: env.var("ACCPROF_OUT"),
            quiet: env.flag("ACCPROF_QUIET", false),
            report,
            buffer_words,
            max_buffers,
            max_wait_ms,
            cupti,
            cuda_events,
            symbols,
            content,
            problems: env.problems,
        }
    }
}

/// A yes/no value: `Some(Some(b))` for one of the spellings, `Some(None)` for unset or empty
/// (the setting's default), `None` for anything else.
pub fn flag(v: Option<&str>) -> Option<Option<bool>> {
    match v.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") => Some(None),
        Some("1" | "on" | "yes" | "true") => Some(Some(true)),
        Some("0" | "off" | "no" | "false") => Some(Some(false)),
        _ => None,
    }
}

/// A yes/no setting where it acts, without saying anything: `default` when unset or unusable
/// (Config::from_env says an unusable value, once).
pub fn flag_value(k: &str, default: bool) -> bool {
    flag(std::env::var(k).ok().as_deref())
        .flatten()
        .unwrap_or(default)
}

/// ACCPROF_CLOCK: `Some(true)` for `monotonic`, `Some(false)` for auto (unset, empty, `auto`,
/// `tsc`), `None` for anything else (auto, said by Config::from_env).
pub fn clock_setting() -> Option<bool> {
    match std::env::var("ACCPROF_CLOCK")
        .ok()
        .map(|v| v.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("" | "auto" | "tsc") => Some(false),
        Some("monotonic") => Some(true),
        _ => None,
    }
}

/// ACCPROF_DISABLE, read once: set to a spelling of yes, the library loads but registers with
/// no runtime. A value that is no spelling of yes or no disables too (whoever set it meant
/// something), and is said by [`say_disable_problem`].
pub fn disabled() -> bool {
    disable_setting().0
}

fn disable_setting() -> &'static (bool, Option<String>) {
    static SETTING: std::sync::OnceLock<(bool, Option<String>)> = std::sync::OnceLock::new();
    SETTING.get_or_init(|| {
        let v = std::env::var("ACCPROF_DISABLE").ok();
        match flag(v.as_deref()) {
            Some(b) => (b.unwrap_or(false), None),
            None => (
                true,
                Some(format!(
                    "ACCPROF_DISABLE={} is not 1 or 0 (on/off, yes/no, true/false); disabled",
                    v.unwrap_or_default()
                )),
            ),
        }
    })
}

/// Says an unusable ACCPROF_DISABLE once per process; called where a runtime is at hand, so
/// that processes that never use OpenACC (a shell that starts the program) say nothing.
pub fn say_disable_problem() {
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Some(p) = &disable_setting().1 {
        SAID.call_once(|| eprintln!("accprof: {p}"));
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
    /// The settings, and one line per value that could not be used (said once, at load).
    pub fn from_env() -> (Self, Vec<String>) {
        let mut env = Env::default();
        let mode = env.switch("ACCPROF_HEAP");
        let min_bytes = env.num(
            "ACCPROF_HEAP_MIN_BYTES",
            HEAP_MIN_BYTES_DEFAULT as u64,
            1,
            u64::MAX,
        ) as usize;
        (HeapConfig { mode, min_bytes }, env.problems)
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
    /// The setting, or `None` for a value that is none of the spellings.
    pub fn parse_strict(v: Option<&str>) -> Option<Self> {
        if v.is_some_and(|v| v.trim().eq_ignore_ascii_case("auto")) {
            return Some(Switch::Auto);
        }
        Some(match flag(v)? {
            None => Switch::Auto,
            Some(true) => Switch::On,
            Some(false) => Switch::Off,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_numbers_are_said_with_the_variable_and_the_value_used() {
        let mut env = Env::default();
        std::env::set_var("ACCPROF_TEST_NUM_A", "lots");
        std::env::set_var("ACCPROF_TEST_NUM_B", "3");
        assert_eq!(env.num("ACCPROF_TEST_NUM_A", 64, 1, 100), 64);
        assert_eq!(env.num("ACCPROF_TEST_NUM_B", 64, 16, 100), 16);
        assert_eq!(env.num("ACCPROF_TEST_NUM_UNSET", 64, 1, 100), 64);
        assert_eq!(
            env.problems,
            [
                "ACCPROF_TEST_NUM_A=lots is not a whole number; using the default, 64",
                "ACCPROF_TEST_NUM_B=3 is below the smallest value, 16; using 16"
            ]
        );
    }

    #[test]
    fn every_yes_no_setting_takes_the_same_spellings_and_empty_is_unset() {
        for off in ["0", "off", "no", "false", "OFF", " No "] {
            assert_eq!(flag(Some(off)), Some(Some(false)), "{off}");
        }
        for on in ["1", "on", "yes", "true", "TRUE"] {
            assert_eq!(flag(Some(on)), Some(Some(true)), "{on}");
        }
        assert_eq!(flag(Some("")), Some(None));
        assert_eq!(flag(None), Some(None));
        assert_eq!(flag(Some("please")), None);
        let mut env = Env::default();
        std::env::set_var("ACCPROF_TEST_FLAG_A", "please");
        std::env::set_var("ACCPROF_TEST_FLAG_B", "");
        assert!(!env.flag("ACCPROF_TEST_FLAG_A", false));
        assert!(env.flag("ACCPROF_TEST_FLAG_B", true), "empty: the default");
        assert_eq!(
            env.problems,
            ["ACCPROF_TEST_FLAG_A=please is not 1 or 0 (on/off, yes/no, true/false); using 0"]
        );
    }

    #[test]
    fn switch_parses_the_usual_spellings() {
        assert_eq!(Switch::parse_strict(None), Some(Switch::Auto));
        assert_eq!(Switch::parse_strict(Some("auto")), Some(Switch::Auto));
        assert_eq!(
            Switch::parse_strict(Some("banana")),
            None,
            "said, then auto"
        );
        for on in ["on", "ON", " 1 ", "yes", "true"] {
            assert_eq!(Switch::parse_strict(Some(on)), Some(Switch::On), "{on}");
        }
        for off in ["off", "0", "no", "false"] {
            assert_eq!(Switch::parse_strict(Some(off)), Some(Switch::Off), "{off}");
        }
    }
}
