//! What the checker knows: the arrays on the device, the arrays released from it that it still
//! watches, the host accesses it saw, and the findings.

use super::{guard, origin};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// A place in the program: the return address of a call into the runtime (a directive), or an
/// access the fault handler saw (its instruction and the program's return addresses above it
/// when it was inside a library).
#[derive(Clone, Debug, Default)]
pub enum Place {
    #[default]
    Unknown,
    Call(usize),
    Access {
        pc: usize,
        stack: Vec<usize>,
    },
}

/// One finding, before its places are resolved to source lines.
#[derive(Clone, Debug)]
pub struct Finding {
    pub kind: &'static str,
    pub host: usize,
    pub bytes: usize,
    /// The clause's text where the runtime was given one (the construct API), else empty.
    pub name: String,
    /// Where the problem is in the program (the report says what, per kind).
    pub at: Place,
    /// The construct it concerns.
    pub construct: Place,
    /// A second construct where one matters (the one that sent data back, the kernel that
    /// changed it).
    pub other: Place,
    /// Whether the access at `at` was a write.
    pub write: bool,
    /// Which case of its kind, where a kind has several ("upload_overwritten": an upload the
    /// kernel overwrote before reading, the upload half of unused_transfer); else empty.
    pub detail: &'static str,
}

/// A host access the guards saw (the first after a release or a sync), for `accprof advise`.
#[derive(Clone, Debug)]
pub struct HostAccess {
    pub host: usize,
    pub bytes: usize,
    pub at: Place,
    pub write: bool,
    pub time_ns: u64,
}

/// An array on the device.
#[derive(Debug)]
pub struct Tracked {
    pub host: usize,
    pub bytes: usize,
    pub dev: u64,
    pub name: String,
    /// The directive that mapped it.
    pub mapped_at: Place,
    /// Its host copy is on the mapping thread's stack.
    pub on_stack: bool,
    /// A digest of the device copy when the copies last agreed: without a guard on the host
    /// copy (on the stack, sharing its pages, snapshot by an async queue) the host's bytes may
    /// have changed since, so a kernel's change is seen on the device copy alone.
    pub synced_digest: Option<u64>,
    /// Its device copy holds device addresses where the host's holds host ones (a Fortran
    /// descriptor, a struct with an attached pointer): the copies differ by design, so its
    /// content is not compared.
    pub holds_pointers: bool,
    /// The device copy holds defined data: an upload filled it or a kernel wrote it.
    pub defined: bool,
    /// The device copy started as (or was last synced to) a copy of the host's: a kernel's
    /// change to it is a result the host may want.
    pub from_host: bool,
    /// The kernel that changed the device copy since the copies last agreed.
    pub changed_by: Option<Place>,
    /// The host wrote its copy since the copies last agreed (and where, when a guard saw it).
    pub host_wrote: Option<(Place, bool)>,
    /// The guard on its host copy, if any, and what it watches.
    pub guard: Option<(usize, guard::Watch)>,
    /// The last upload to it that no kernel has read yet (for unused uploads).
    pub pending_upload: Option<Place>,
    /// The copies last agreed through an upload of a snapshot the host's bytes were copied to
    /// when it was queued (a small copy on an async queue): the host may change them at once.
    pub synced_from_snapshot: bool,
    /// Its last copy back moved what the host already had (reported as redundant, so its
    /// return to the device is not reported again as unused).
    pub redundant_download: bool,
}

/// An array released from the device that the checker still watches until the host touches
/// it or maps it again.
#[derive(Debug)]
pub struct Released {
    pub host: usize,
    pub bytes: usize,
    pub name: String,
    pub guard: Option<usize>,
    /// The copy back that released it, while the host has not touched the data.
    pub download: Option<Place>,
    /// Results left on the device: (the release, the kernel that changed them).
    pub dropped: Option<(Place, Place)>,
}

#[derive(Default)]
pub struct State {
    /// By host address.
    pub tracked: BTreeMap<usize, Tracked>,
    pub released: BTreeMap<usize, Released>,
    pub findings: Vec<Finding>,
    pub accesses: Vec<HostAccess>,
    /// Uploads whose first use was judged: (the upload's place, the kernel's, the bytes).
    pub judged: std::collections::HashSet<(usize, usize, usize)>,
    /// Big uploads whose first kernel changed every page: watched the next time they come.
    pub every_page_changed: std::collections::HashSet<(usize, usize, usize)>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

pub fn lock() -> StateGuard {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(State::default);
    StateGuard(g)
}

pub struct StateGuard(MutexGuard<'static, Option<State>>);

impl std::ops::Deref for StateGuard {
    type Target = State;
    fn deref(&self) -> &State {
        self.0.as_ref().expect("initialised")
    }
}

impl std::ops::DerefMut for StateGuard {
    fn deref_mut(&mut self) -> &mut State {
        self.0.as_mut().expect("initialised")
    }
}

impl State {
    /// The tracked array holding host address `host`.
    pub fn tracked_at(&mut self, host: usize) -> Option<&mut Tracked> {
        let (_, t) = self.tracked.range_mut(..=host).next_back()?;
        (host < t.host + t.bytes.max(1)).then_some(t)
    }

    /// The tracked array whose device copy holds device address `dev`.
    pub fn tracked_by_device(&mut self, dev: u64) -> Option<&mut Tracked> {
        self.tracked
            .values_mut()
            .find(|t| dev >= t.dev && dev < t.dev + t.bytes.max(1) as u64)
    }

    /// Adds a finding unless the same kind was already found for the same array at the same
    /// place (a loop repeats its bugs).
    pub fn add(&mut self, f: Finding) {
        let same = |g: &Finding| {
            g.kind == f.kind
                && g.detail == f.detail
                && g.host == f.host
                && place_key(&g.at) == place_key(&f.at)
        };
        if !self.findings.iter().any(same) {
            self.findings.push(f);
        }
    }
}

fn place_key(p: &Place) -> usize {
    match p {
        Place::Unknown => 0,
        Place::Call(r) => *r,
        Place::Access { pc, stack } => {
            if origin::is_program_code(*pc) {
                *pc
            } else {
                stack.first().copied().unwrap_or(*pc)
            }
        }
    }
}

/// The access a fired guard recorded.
pub fn access_of(slot: usize) -> (Place, bool, u8, u64) {
    use std::sync::atomic::Ordering;
    let a = guard::access(slot);
    let pc = a.pc.load(Ordering::Acquire);
    let stack: Vec<usize> = a
        .stack
        .iter()
        .map(|w| w.load(Ordering::Relaxed))
        .take_while(|&w| w != 0)
        .collect();
    (
        Place::Access { pc, stack },
        a.write.load(Ordering::Relaxed) != 0,
        a.who.load(Ordering::Relaxed),
        a.time_ns.load(Ordering::Relaxed),
    )
}
