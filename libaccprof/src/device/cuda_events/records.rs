//! A completed pair of CUDA events as a device record, of the same kinds and fields the CUPTI
//! path writes (docs/trace-format.md, "Device records"), flagged `from_cuda_events`.

use super::pending::{Op, Pair};
use accprof_trace::{device, Event, EventFlags, Field};

/// The device record for `p`, which the device ran from `start_ns` to `end_ns`
/// (CLOCK_MONOTONIC). `host_call_ns` is left in the hot path's clock unit (the operation's
/// enqueue start, as the host event has it): the collector converts it with the same converter
/// as the host event, so that the two are equal and the reader ties them together.
pub fn to_event(p: &Pair, start_ns: u64, end_ns: u64) -> Event {
    let kind = match p.op {
        Op::Kernel => device::KERNEL,
        Op::Upload | Op::Download => device::MEMCPY,
    };
    let mut e = Event::new(kind, start_ns);
    e.end_ns = end_ns.max(start_ns);
    e.set(Field::AsyncHandle, p.stream as u64);
    e.set_i64(Field::Thread, p.thread);
    e.set(Field::HostCallNs, p.host_start);
    if let Some(r) = p.nvtx_range {
        e.set(Field::NvtxRange, r);
    }
    e.add_flags(EventFlags::FROM_CUDA_EVENTS);
    match p.op {
        Op::Kernel => {
            if let Some(n) = p.name {
                e.set(Field::KernelName, n);
            }
        }
        Op::Upload | Op::Download => {
            // The runtime's event says the direction; the memory kinds are not known here.
            let dir = if p.op == Op::Upload {
                device::COPY_HTOD
            } else {
                device::COPY_DTOH
            };
            e.set(Field::CopyKind, device::copy_kind(dir as u8, 0, 0));
            if let Some(b) = p.bytes {
                e.set(Field::Bytes, b);
            }
            if let Some(n) = p.name {
                e.set(Field::VarName, n);
            }
            if let Some(h) = p.host_ptr {
                e.set(Field::HostPtr, h);
            }
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::cuda_events::pool::Context;
    use std::sync::Arc;

    fn pair(op: Op) -> Pair {
        Pair {
            ctx: Arc::new(Context::new(1, 8)),
            start: 1,
            end: 2,
            op,
            thread: 3,
            host_start: 777,
            stream: 0x5000,
            bytes: Some(4096),
            name: Some(12),
            host_ptr: Some(0xabc0),
            nvtx_range: None,
        }
    }

    #[test]
    fn a_launch_becomes_a_kernel_record() {
        let e = to_event(&pair(Op::Kernel), 1_000, 3_000);
        assert_eq!(e.kind, device::KERNEL);
        assert_eq!((e.start_ns, e.end_ns), (1_000, 3_000));
        assert_eq!(e.kernel_name().map(|s| s.0), Some(12));
        assert_eq!(
            e.get(Field::AsyncHandle),
            Some(0x5000),
            "stream = the runtime's async_handle"
        );
        assert_eq!(e.thread(), Some(3));
        assert_eq!(
            e.get(Field::HostCallNs),
            Some(777),
            "host call time = the enqueue start"
        );
        assert!(e.flags().contains(EventFlags::FROM_CUDA_EVENTS));
        assert_eq!(e.get(Field::CorrelationId), None, "no CUPTI correlation");
        assert_eq!(e.bytes(), None);
    }

    #[test]
    fn uploads_and_downloads_become_copies_with_their_direction() {
        let up = to_event(&pair(Op::Upload), 10, 20);
        assert_eq!(up.kind, device::MEMCPY);
        assert_eq!(
            device::split_copy_kind(up.get(Field::CopyKind).unwrap()).0,
            device::COPY_HTOD
        );
        assert_eq!(up.bytes(), Some(4096));
        assert_eq!(up.var_name().map(|s| s.0), Some(12));
        assert_eq!(up.get(Field::HostPtr), Some(0xabc0));
        let down = to_event(&pair(Op::Download), 10, 5);
        assert_eq!(
            device::split_copy_kind(down.get(Field::CopyKind).unwrap()).0,
            device::COPY_DTOH
        );
        assert_eq!(down.duration_ns(), 0, "an end before its start is clamped");
        assert!(down.flags().contains(EventFlags::FROM_CUDA_EVENTS));
    }
}
