//! The trace's header (who recorded it), module map (for resolving return addresses) and footer.
//!
//! Header and footer are stored as key/value pairs so that a newer writer can add keys that an
//! older reader skips.

use crate::varint::{put_blob, put_u64, Cursor, Malformed};

/// Who and what was profiled. Written once, in the first chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// Path of the executable (`/proc/self/exe`).
    pub exe: String,
    /// The command line, `argv[0]` first.
    pub args: Vec<String>,
    pub pid: u32,
    pub hostname: String,
    /// Wall-clock time when recording started, nanoseconds since the Unix epoch.
    pub start_unix_ns: u64,
    /// CLOCK_MONOTONIC at the same moment: subtract from an event's timestamp, add
    /// `start_unix_ns`, and you have the event's wall-clock time.
    pub start_monotonic_ns: u64,
    /// The accprof version that wrote the trace.
    pub tool_version: String,
    /// From OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID, when one was set.
    pub mpi_rank: Option<u32>,
    /// How the tool got its callbacks registered (e.g. "acc_register_library", "constructor").
    pub registration: String,
    /// Keys this reader does not know, kept for `dump`.
    pub extra: Vec<(String, String)>,
}

/// The header key the tool library writes when it records device activity, naming what
/// recorded it ("cupti ...", "cuda_events").
pub const DEVICE_ACTIVITY_KEY: &str = "device_activity";

impl Header {
    /// What recorded device activity into the trace ([`DEVICE_ACTIVITY_KEY`]), if anything did.
    pub fn device_activity(&self) -> Option<&str> {
        self.extra
            .iter()
            .find(|(k, _)| k == DEVICE_ACTIVITY_KEY)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let mut kv = |k: &str, v: &str| {
            put_blob(out, k.as_bytes());
            put_blob(out, v.as_bytes());
        };
        kv("exe", &self.exe);
        for a in &self.args {
            kv("arg", a);
        }
        kv("pid", &self.pid.to_string());
        kv("hostname", &self.hostname);
        kv("start_unix_ns", &self.start_unix_ns.to_string());
        kv("start_monotonic_ns", &self.start_monotonic_ns.to_string());
        kv("tool_version", &self.tool_version);
        if let Some(r) = self.mpi_rank {
            kv("mpi_rank", &r.to_string());
        }
        kv("registration", &self.registration);
        for (k, v) in &self.extra {
            kv(k, v);
        }
    }

    pub(crate) fn decode(payload: &[u8]) -> Result<Self, Malformed> {
        let mut h = Header::default();
        let mut cur = Cursor::new(payload);
        while !cur.is_empty() {
            let text =
                |b: &[u8]| crate::printable::printable(&String::from_utf8_lossy(b)).into_owned();
            let k = text(cur.blob()?);
            let v = text(cur.blob()?);
            let num = |v: &str| v.parse::<u64>().map_err(|_| Malformed);
            match k.as_str() {
                "exe" => h.exe = v,
                "arg" => h.args.push(v),
                "pid" => h.pid = u32::try_from(num(&v)?).map_err(|_| Malformed)?,
                "hostname" => h.hostname = v,
                "start_unix_ns" => h.start_unix_ns = num(&v)?,
                "start_monotonic_ns" => h.start_monotonic_ns = num(&v)?,
                "tool_version" => h.tool_version = v,
                "mpi_rank" => h.mpi_rank = Some(u32::try_from(num(&v)?).map_err(|_| Malformed)?),
                "registration" => h.registration = v,
                _ => h.extra.push((k, v)),
            }
        }
        Ok(h)
    }
}

/// A loaded object (executable or shared library) of the profiled process, so that a return
/// address recorded in an event can be resolved to a file and line after the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Module {
    pub path: String,
    /// The load bias (`dlpi_addr`): runtime address minus this is the address in the file.
    pub bias: u64,
    /// Lowest and one-past-highest runtime address of its loaded segments.
    pub start: u64,
    pub end: u64,
    /// The GNU build id, when the object has one: tells whether the file on disk is still the
    /// one that ran.
    pub build_id: Vec<u8>,
}

impl Module {
    pub fn contains(&self, addr: u64) -> bool {
        (self.start..self.end).contains(&addr)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_blob(out, self.path.as_bytes());
        put_u64(out, self.bias);
        put_u64(out, self.start);
        put_u64(out, self.end);
        put_blob(out, &self.build_id);
    }

    pub(crate) fn decode(cur: &mut Cursor<'_>) -> Result<Self, Malformed> {
        Ok(Module {
            path: String::from_utf8_lossy(cur.blob()?).into_owned(),
            bias: cur.u64()?,
            start: cur.u64()?,
            end: cur.u64()?,
            build_id: cur.blob()?.to_vec(),
        })
    }
}

/// Written last, when the tool shut down cleanly. Its absence means the program was killed or
/// crashed (or is still running).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footer {
    /// Events the tool recorded, as it counted them.
    pub events_recorded: u64,
    /// Events the tool had to drop because no buffer was free (its writer fell behind, or
    /// more threads recorded at once than there were buffers).
    pub events_dropped: u64,
    /// CLOCK_MONOTONIC when the footer was written.
    pub end_monotonic_ns: u64,
}

impl Footer {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_u64(out, self.events_recorded);
        put_u64(out, self.events_dropped);
        put_u64(out, self.end_monotonic_ns);
    }

    pub(crate) fn decode(payload: &[u8]) -> Result<Self, Malformed> {
        let mut cur = Cursor::new(payload);
        Ok(Footer {
            events_recorded: cur.u64()?,
            events_dropped: cur.u64()?,
            end_monotonic_ns: cur.u64()?,
        })
    }
}
