//! CUPTI activity records (kernels, memcpys, memsets) read from a completed buffer, and turned
//! into trace events.
//!
//! Records are read field by field at the offsets of CUPTI's headers, never cast to a struct:
//! a buffer is bytes, and CUPTI versions differ in the record's total size, not its prefix
//! (`CUpti_ActivityKernel4`..`11`, `CUpti_ActivityMemcpy5`/`6`, `CUpti_ActivityMemset4`).

use super::calls::Call;
use accprof_trace::{device, Event, Field};

/// The part of an activity record accprof keeps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Activity {
    Kernel {
        start: u64,
        end: u64,
        stream: u32,
        correlation: u32,
        name: *const std::ffi::c_char,
        /// The CUDA device ordinal it ran on.
        device: u32,
        grid: [u32; 3],
        block: [u32; 3],
        registers: u16,
        /// Static plus dynamic shared memory per block.
        shared_mem: u64,
    },
    Memcpy {
        start: u64,
        end: u64,
        stream: u32,
        correlation: u32,
        bytes: u64,
        copy_kind: u8,
        src_kind: u8,
        dst_kind: u8,
    },
    Memset {
        start: u64,
        end: u64,
        stream: u32,
        correlation: u32,
        bytes: u64,
    },
}

fn u32_at(r: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(r.get(off..off + 4)?.try_into().ok()?))
}
fn u64_at(r: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(r.get(off..off + 8)?.try_into().ok()?))
}

/// Reads one record. `r` starts at the record and holds at least its prefix (CUPTI's records
/// are larger than what is read here). `None` for kinds accprof did not enable.
pub fn parse(r: &[u8]) -> Option<Activity> {
    match u32_at(r, 0)? {
        super::ffi::KIND_KERNEL | super::ffi::KIND_CONCURRENT_KERNEL => Some(Activity::Kernel {
            start: u64_at(r, 16)?,
            end: u64_at(r, 24)?,
            stream: u32_at(r, 48)?,
            correlation: u32_at(r, 92)?,
            name: u64_at(r, 104)? as usize as *const std::ffi::c_char,
            device: u32_at(r, 40)?,
            grid: [u32_at(r, 52)?, u32_at(r, 56)?, u32_at(r, 60)?],
            block: [u32_at(r, 64)?, u32_at(r, 68)?, u32_at(r, 72)?],
            registers: u16::from_le_bytes(r.get(6..8)?.try_into().ok()?),
            // Both are int32_t in the header; a negative value (never seen) counts as none.
            shared_mem: u64::from(u32_at(r, 76)?.min(i32::MAX as u32))
                + u64::from(u32_at(r, 80)?.min(i32::MAX as u32)),
        }),
        super::ffi::KIND_MEMCPY => Some(Activity::Memcpy {
            copy_kind: *r.get(4)?,
            src_kind: *r.get(5)?,
            dst_kind: *r.get(6)?,
            bytes: u64_at(r, 8)?,
            start: u64_at(r, 16)?,
            end: u64_at(r, 24)?,
            stream: u32_at(r, 40)?,
            correlation: u32_at(r, 44)?,
        }),
        super::ffi::KIND_MEMSET => Some(Activity::Memset {
            bytes: u64_at(r, 8)?,
            start: u64_at(r, 16)?,
            end: u64_at(r, 24)?,
            stream: u32_at(r, 40)?,
            correlation: u32_at(r, 44)?,
        }),
        _ => None,
    }
}

/// How many bytes a record's prefix needs, so that a record is never read past its buffer.
pub const MAX_PREFIX: usize = 112;

impl Activity {
    pub fn correlation(&self) -> u32 {
        match *self {
            Activity::Kernel { correlation, .. }
            | Activity::Memcpy { correlation, .. }
            | Activity::Memset { correlation, .. } => correlation,
        }
    }

    /// The trace event for this record. `to_ns` converts CUPTI timestamps to CLOCK_MONOTONIC;
    /// `call` is the driver call that issued it, when the callback saw it; `kernel_name` the
    /// interned name of a kernel.
    #[allow(clippy::wrong_self_convention)]
    pub fn to_event(
        &self,
        call: Option<&Call>,
        to_ns: impl Fn(u64) -> u64,
        kernel_name: Option<u32>,
    ) -> Event {
        let (kind, start, end, stream) = match *self {
            Activity::Kernel {
                start, end, stream, ..
            } => (device::KERNEL, start, end, stream),
            Activity::Memcpy {
                start, end, stream, ..
            } => (device::MEMCPY, start, end, stream),
            Activity::Memset {
                start, end, stream, ..
            } => (device::MEMSET, start, end, stream),
        };
        let mut e = Event::new(kind, to_ns(start));
        e.end_ns = to_ns(end).max(e.start_ns);
        e.set(Field::AsyncHandle, u64::from(stream));
        e.set(Field::CorrelationId, u64::from(self.correlation()));
        if let Some(c) = call {
            e.set_i64(Field::Thread, c.thread);
            e.set(Field::HostCallNs, c.host_ns);
            if c.nvtx_range != 0 {
                e.set(Field::NvtxRange, u64::from(c.nvtx_range));
            }
        }
        match *self {
            Activity::Kernel {
                device: dev,
                grid,
                block,
                registers,
                shared_mem,
                ..
            } => {
                if let Some(id) = kernel_name {
                    e.set(Field::KernelName, u64::from(id));
                }
                e.set_i64(Field::DeviceNumber, i64::from(dev));
                let dim = |d: [u32; 3]| device::pack_dim3(d[0].into(), d[1].into(), d[2].into());
                e.set(Field::GridDim, dim(grid));
                e.set(Field::BlockDim, dim(block));
                e.set(Field::Registers, u64::from(registers));
                e.set(Field::SharedMem, shared_mem);
            }
            Activity::Memcpy {
                bytes,
                copy_kind,
                src_kind,
                dst_kind,
                ..
            } => {
                e.set(Field::Bytes, bytes);
                e.set(
                    Field::CopyKind,
                    device::copy_kind(copy_kind, src_kind, dst_kind),
                );
                // The host side of the copy: the source of an upload, the destination of a
                // download, as the driver call named them.
                let host = call.and_then(|c| match u64::from(copy_kind) {
                    device::COPY_HTOD => c.src,
                    device::COPY_DTOH => c.dst,
                    _ => None,
                });
                if let Some(p) = host.filter(|&p| p != 0) {
                    e.set(Field::HostPtr, p);
                }
            }
            Activity::Memset { bytes, .. } => e.set(Field::Bytes, bytes),
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memcpy record laid out as CUpti_ActivityMemcpy6 (offsets from cupti_activity.h).
    fn memcpy_record(
        copy_kind: u8,
        bytes: u64,
        start: u64,
        end: u64,
        stream: u32,
        corr: u32,
    ) -> Vec<u8> {
        let mut r = vec![0u8; 128];
        r[0..4].copy_from_slice(&1u32.to_le_bytes());
        r[4] = copy_kind;
        r[5] = 1; // pageable
        r[6] = 3; // device
        r[8..16].copy_from_slice(&bytes.to_le_bytes());
        r[16..24].copy_from_slice(&start.to_le_bytes());
        r[24..32].copy_from_slice(&end.to_le_bytes());
        r[40..44].copy_from_slice(&stream.to_le_bytes());
        r[44..48].copy_from_slice(&corr.to_le_bytes());
        r
    }

    /// A kernel record laid out as CUpti_ActivityKernel9 (offsets checked with offsetof against
    /// CUDA 12's cupti_activity.h), launched on device 1 with grid 4x2x1, block 32x8x1, 40
    /// registers, 1 KiB static and 512 bytes dynamic shared memory.
    fn kernel_record(start: u64, end: u64, stream: u32, corr: u32, name: u64) -> Vec<u8> {
        let mut r = vec![0u8; 208];
        r[0..4].copy_from_slice(&10u32.to_le_bytes());
        r[6..8].copy_from_slice(&40u16.to_le_bytes());
        r[40..44].copy_from_slice(&1u32.to_le_bytes());
        for (off, v) in [
            (52, 4u32),
            (56, 2),
            (60, 1),
            (64, 32),
            (68, 8),
            (72, 1),
            (76, 1024),
            (80, 512),
        ] {
            r[off..off + 4].copy_from_slice(&v.to_le_bytes());
        }
        r[16..24].copy_from_slice(&start.to_le_bytes());
        r[24..32].copy_from_slice(&end.to_le_bytes());
        r[48..52].copy_from_slice(&stream.to_le_bytes());
        r[92..96].copy_from_slice(&corr.to_le_bytes());
        r[104..112].copy_from_slice(&name.to_le_bytes());
        r
    }

    #[test]
    fn memcpy_records_become_device_copies_with_the_calls_host_pointer() {
        let a = parse(&memcpy_record(1, 1 << 27, 1_000, 21_000, 7, 42)).unwrap();
        assert_eq!(a.correlation(), 42);
        let call = Call {
            thread: 9,
            host_ns: 500,
            src: Some(0x5555_0000),
            dst: Some(0xd000),
            nvtx_range: 4,
        };
        let e = a.to_event(Some(&call), |t| t + 100, None);
        assert_eq!(e.kind, device::MEMCPY);
        assert_eq!((e.start_ns, e.end_ns), (1_100, 21_100));
        assert_eq!(e.bytes(), Some(1 << 27));
        assert_eq!(
            e.get(Field::HostPtr),
            Some(0x5555_0000),
            "upload: the source is the host side"
        );
        assert_eq!(e.thread(), Some(9));
        assert_eq!(e.get(Field::HostCallNs), Some(500));
        assert_eq!(e.get(Field::AsyncHandle), Some(7));
        assert_eq!(
            device::split_copy_kind(e.get(Field::CopyKind).unwrap()),
            (1, 1, 3)
        );
        let down =
            parse(&memcpy_record(2, 8, 0, 1, 0, 43))
                .unwrap()
                .to_event(Some(&call), |t| t, None);
        assert_eq!(
            down.get(Field::HostPtr),
            Some(0xd000),
            "download: the destination is the host side"
        );
    }

    #[test]
    fn kernel_records_keep_name_stream_and_correlation() {
        let a = parse(&kernel_record(5, 9, 13, 77, 0xabc)).unwrap();
        assert!(matches!(
            a,
            Activity::Kernel {
                stream: 13,
                correlation: 77,
                ..
            }
        ));
        let e = a.to_event(None, |t| t, Some(3));
        assert_eq!(e.kind, device::KERNEL);
        assert_eq!(e.kernel_name().map(|s| s.0), Some(3));
        assert_eq!(e.get_i64(Field::DeviceNumber), Some(1));
        assert_eq!(
            device::split_dim3(e.get(Field::GridDim).unwrap()),
            (4, 2, 1)
        );
        assert_eq!(
            device::split_dim3(e.get(Field::BlockDim).unwrap()),
            (32, 8, 1)
        );
        assert_eq!(e.get(Field::Registers), Some(40));
        assert_eq!(e.get(Field::SharedMem), Some(1536));
        assert_eq!(e.thread(), None, "no call seen: no thread claimed");
    }

    #[test]
    fn short_or_foreign_records_are_skipped() {
        assert_eq!(parse(&[1, 0, 0]), None);
        let mut other = memcpy_record(1, 1, 1, 2, 0, 0);
        other[0] = 4; // CUPTI_ACTIVITY_KIND_DRIVER: not enabled by accprof
        assert_eq!(parse(&other), None);
        assert_eq!(parse(&memcpy_record(1, 1, 1, 2, 0, 0)[..40]), None);
    }

    #[test]
    fn a_device_end_before_its_start_is_clamped() {
        let a = parse(&memcpy_record(1, 1, 50, 40, 0, 1)).unwrap();
        let e = a.to_event(None, |t| t, None);
        assert_eq!(e.duration_ns(), 0);
    }
}
