//! The plan and the protocol of a staged upload (pageable host memory -> device), apart from
//! CUDA so that they can be tested anywhere.
//!
//! Two granularities, because the two sides want different ones (measured on the H200,
//! docs/performance/shim.md):
//! - the DMA: each copy costs about 3 us on top of its bytes, so 1 MiB copies of pinned memory
//!   reach only 47-48 GB/s where 4 MiB copies reach 52-53 and one 64 MiB copy 55. A *chunk* is
//!   one DMA and fills one pinned buffer; chunks start small (the first DMA begins after a
//!   small copy) and double up to the buffer size. Towards the end they halve again, down to
//!   `tail`: the last chunk's DMA can start only once its last piece is copied, and when the
//!   host copy is the slower side (a source that is not in the CPU's caches) a whole buffer's
//!   DMA after it would add 80 us to a 64 MiB upload that takes 1.6 ms.
//! - the host copy: one thread copying a 4 MiB chunk alone would hold its DMA back for a
//!   millisecond. A chunk is split into *pieces* (256 KiB), which the staging threads take in
//!   order from a shared counter; whoever copies a chunk's last piece issues its DMA.
//!
//! Chunk `c` uses buffer `c % bufs`. A piece of chunk `c` may be written only once the
//! buffer's previous chunk, `c - bufs`, has been issued (all its pieces copied) and its DMA has
//! completed. Pieces are taken in increasing order, so the earliest unfinished piece never
//! waits for a later one: the pipeline cannot deadlock.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A part of one chunk, copied by one thread: bytes `off..off + len` of the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub chunk: usize,
    pub off: usize,
    pub len: usize,
}

/// The shape of the pipeline.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// First chunk; each next one is twice as big, up to `chunk`.
    pub first: usize,
    /// Largest chunk = one DMA = the size of a buffer.
    pub chunk: usize,
    /// Largest piece (host copy by one thread).
    pub piece: usize,
    /// Pinned buffers (and their streams and events).
    pub bufs: usize,
    /// Smallest last chunk: a chunk is at most half of what remains, but never leaves less
    /// than this behind (0: no halving at the end).
    pub tail: usize,
}

/// What the pipeline needs from the device: asynchronous copies out of the pinned buffers, each
/// buffer's copies in order, and a way to wait for a buffer's last one.
pub trait Dma {
    /// Starts copying the first `len` bytes of buffer `buf` to byte `off` of the destination;
    /// false on failure.
    fn issue(&self, buf: usize, off: usize, len: usize) -> bool;
    /// Waits until the last copy issued from buffer `buf` has completed (at once if none has);
    /// false on failure.
    fn wait(&self, buf: usize) -> bool;
}

/// One transfer's plan and progress, shared by the staging threads.
#[derive(Debug)]
pub struct Upload {
    shape: Shape,
    chunks: Vec<(usize, usize)>,
    pieces: Vec<Piece>,
    next_piece: AtomicUsize,
    /// Pieces of each chunk not copied yet.
    pieces_left: Vec<AtomicUsize>,
    /// How many chunks each buffer has had issued...
    issued: Vec<AtomicUsize>,
    /// ...and how many of their DMAs a thread has seen complete: the others then need not ask
    /// the driver again. (Asking once per piece, from many threads at once, cost each staging
    /// thread a large share of an upload: docs/performance/shim.md.)
    completed: Vec<AtomicUsize>,
    failed: AtomicBool,
}

impl Upload {
    pub fn new(shape: Shape, bytes: usize) -> Upload {
        let shape = Shape {
            first: shape.first.max(1),
            chunk: shape.chunk.max(1),
            piece: shape.piece.max(1),
            bufs: shape.bufs.max(1),
            tail: shape.tail,
        };
        let mut chunks = Vec::with_capacity(bytes / shape.chunk + 16);
        let (mut off, mut size) = (0, shape.first.min(shape.chunk));
        while off < bytes {
            let left = bytes - off;
            // Half of what is left, in whole pieces (a piece a thread copies in full).
            let half = left.div_ceil(2) / shape.piece * shape.piece;
            let mut taper = if shape.tail > 0 {
                shape.tail.max(half)
            } else {
                left
            };
            if left.saturating_sub(taper) < shape.tail {
                taper = left; // no last chunk smaller than the tail
            }
            let len = size.min(left).min(taper);
            chunks.push((off, len));
            off += len;
            size = (size * 2).min(shape.chunk);
        }
        let mut pieces = Vec::with_capacity(bytes / shape.piece + chunks.len());
        let mut pieces_left = Vec::with_capacity(chunks.len());
        for (chunk, &(off, len)) in chunks.iter().enumerate() {
            let n = len.div_ceil(shape.piece);
            pieces.extend((0..n).map(|i| Piece {
                chunk,
                off: off + i * shape.piece,
                len: shape.piece.min(len - i * shape.piece),
            }));
            pieces_left.push(AtomicUsize::new(n));
        }
        Upload {
            shape,
            chunks,
            pieces,
            next_piece: AtomicUsize::new(0),
            pieces_left,
            issued: (0..shape.bufs).map(|_| AtomicUsize::new(0)).collect(),
            completed: (0..shape.bufs).map(|_| AtomicUsize::new(0)).collect(),
            failed: AtomicBool::new(false),
        }
    }

    /// (offset, length) of each chunk, in transfer order.
    pub fn chunks(&self) -> &[(usize, usize)] {
        &self.chunks
    }

    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// One staging thread's share: takes pieces until none is left, copies each into its
    /// buffer with `copy(offset in the transfer, offset in the buffer, buffer, len)`, and
    /// issues a chunk's DMA when its last piece is in.
    ///
    /// `copy` must make its stores visible to the device before it returns (a fence after
    /// non-temporal stores).
    pub fn work(&self, copy: impl Fn(usize, usize, usize, usize), dma: &impl Dma) {
        loop {
            let i = self.next_piece.fetch_add(1, Ordering::Relaxed);
            let Some(&p) = self.pieces.get(i) else { return };
            let buf = p.chunk % self.shape.bufs;
            let generation = p.chunk / self.shape.bufs;
            if generation > 0 {
                // The buffer's previous chunk: issued by whoever copies its last piece...
                let mut spins = 0u32;
                while self.issued[buf].load(Ordering::Acquire) < generation {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
                // ...and then its DMA must have read the buffer. Whoever sees the flag set
                // (Acquire) writes the buffer after the wait that set it (Release) returned.
                if self.completed[buf].load(Ordering::Acquire) < generation {
                    if dma.wait(buf) {
                        self.completed[buf].fetch_max(generation, Ordering::Release);
                    } else {
                        self.failed.store(true, Ordering::Relaxed);
                    }
                }
            }
            let (chunk_off, chunk_len) = self.chunks[p.chunk];
            copy(p.off, p.off - chunk_off, buf, p.len);
            // AcqRel: the issuing thread sees every piece's stores.
            if self.pieces_left[p.chunk].fetch_sub(1, Ordering::AcqRel) == 1 {
                if !dma.issue(buf, chunk_off, chunk_len) {
                    self.failed.store(true, Ordering::Relaxed);
                }
                // Published even after a failure, so that no thread waits forever.
                self.issued[buf].store(generation + 1, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    const MIB: usize = 1 << 20;

    fn shape(first: usize, chunk: usize, piece: usize, bufs: usize) -> Shape {
        Shape {
            first,
            chunk,
            piece,
            bufs,
            tail: 0,
        }
    }

    #[test]
    fn chunks_double_to_the_buffer_size_and_pieces_cover_them() {
        let u = Upload::new(shape(64 << 10, 4 * MIB, MIB, 8), 64 * MIB);
        let sizes: Vec<usize> = u.chunks().iter().map(|c| c.1).collect();
        assert_eq!(
            &sizes[..7],
            &[
                64 << 10,
                128 << 10,
                256 << 10,
                512 << 10,
                MIB,
                2 * MIB,
                4 * MIB
            ]
        );
        assert_eq!(sizes.iter().sum::<usize>(), 64 * MIB);
        assert!(sizes.iter().all(|&s| s <= 4 * MIB));
        // Pieces tile the transfer in order, none crossing a chunk, none over a MiB.
        let mut at = 0;
        for p in u.pieces() {
            let (off, len) = u.chunks()[p.chunk];
            assert_eq!(p.off, at);
            assert!(p.len <= MIB && p.off >= off && p.off + p.len <= off + len);
            at += p.len;
        }
        assert_eq!(at, 64 * MIB);
        assert_eq!(u.pieces().iter().filter(|p| p.chunk == 6).count(), 4);
    }

    #[test]
    fn chunks_halve_towards_the_end_down_to_the_tail() {
        let tail = 256 << 10;
        let u = Upload::new(
            Shape {
                tail,
                ..shape(4 * MIB, 4 * MIB, tail, 8)
            },
            64 * MIB,
        );
        let sizes: Vec<usize> = u.chunks().iter().map(|c| c.1).collect();
        assert_eq!(
            &sizes[sizes.len() - 7..],
            &[4 * MIB, 4 * MIB, 2 * MIB, MIB, 512 << 10, tail, tail]
        );
        assert_eq!(sizes.iter().sum::<usize>(), 64 * MIB);
        // The doubling start (64 KiB, ... 2 MiB) leaves the end unaligned: still whole pieces
        // everywhere but in the last chunk, and nothing smaller than the tail at the end.
        let u = Upload::new(
            Shape {
                tail,
                ..shape(64 << 10, 4 * MIB, tail, 8)
            },
            64 * MIB,
        );
        let sizes: Vec<usize> = u.chunks().iter().map(|c| c.1).collect();
        assert_eq!(
            &sizes[..7],
            &[
                64 << 10,
                128 << 10,
                256 << 10,
                512 << 10,
                MIB,
                2 * MIB,
                4 * MIB
            ],
            "the start is unchanged"
        );
        assert!(sizes[sizes.len() - 1] >= tail && sizes[sizes.len() - 1] < 2 * tail);
        assert!(sizes[sizes.len() - 3] <= MIB);
        let last = sizes.len() - 1;
        assert!(u
            .pieces()
            .iter()
            .filter(|p| p.chunk >= 2 && p.chunk < last)
            .all(|p| p.len == tail));
        // A small upload: the doubling start meets the halving end.
        let u = Upload::new(
            Shape {
                tail,
                ..shape(64 << 10, 4 * MIB, tail, 8)
            },
            MIB,
        );
        let sizes: Vec<usize> = u.chunks().iter().map(|c| c.1).collect();
        assert_eq!(
            sizes,
            [64 << 10, 128 << 10, 256 << 10, 256 << 10, 320 << 10]
        );
    }

    #[test]
    fn odd_sizes_and_tiny_transfers_are_covered() {
        for bytes in [1, 4095, 5 * MIB + 3, 17 * MIB - 1] {
            for tail in [0, 4 << 10, 256 << 10] {
                let u = Upload::new(
                    Shape {
                        tail,
                        ..shape(64 << 10, 4 * MIB, MIB, 3)
                    },
                    bytes,
                );
                assert_eq!(u.chunks().iter().map(|c| c.1).sum::<usize>(), bytes);
                assert_eq!(u.pieces().iter().map(|p| p.len).sum::<usize>(), bytes);
                assert!(u.chunks().iter().all(|c| c.1 > 0 && c.1 <= 4 * MIB));
            }
        }
        assert!(Upload::new(shape(64 << 10, 4 * MIB, MIB, 3), 0)
            .pieces()
            .is_empty());
    }

    /// A device whose copies happen late: a copy reads its buffer only when somebody waits
    /// for that buffer, or at the end. A pipeline that reused a buffer without waiting would
    /// send the wrong bytes.
    struct LazyDma<'a> {
        bufs: &'a [Mutex<Vec<u8>>],
        pending: Mutex<Vec<Option<(usize, usize)>>>,
        device: Mutex<Vec<u8>>,
        issued: AtomicUsize,
        waits: AtomicUsize,
        /// A buffer's copy was issued while its previous one had not completed.
        overlapped: AtomicBool,
    }

    impl LazyDma<'_> {
        fn complete(&self, buf: usize) {
            let job = self.pending.lock().unwrap()[buf].take();
            if let Some((off, len)) = job {
                let b = self.bufs[buf].lock().unwrap();
                self.device.lock().unwrap()[off..off + len].copy_from_slice(&b[..len]);
            }
        }
    }

    impl Dma for LazyDma<'_> {
        fn issue(&self, buf: usize, off: usize, len: usize) -> bool {
            // No panic here: a panicking staging thread would leave the others waiting.
            if self.pending.lock().unwrap()[buf].is_some() {
                self.overlapped.store(true, Ordering::Relaxed);
                self.complete(buf);
            }
            self.pending.lock().unwrap()[buf] = Some((off, len));
            self.issued.fetch_add(1, Ordering::Relaxed);
            true
        }
        fn wait(&self, buf: usize) -> bool {
            self.waits.fetch_add(1, Ordering::Relaxed);
            self.complete(buf);
            true
        }
    }

    fn lazy_dma<'a>(bufs: &'a [Mutex<Vec<u8>>], bytes: usize) -> LazyDma<'a> {
        LazyDma {
            bufs,
            pending: Mutex::new(vec![None; bufs.len()]),
            device: Mutex::new(vec![0; bytes]),
            issued: AtomicUsize::new(0),
            waits: AtomicUsize::new(0),
            overlapped: AtomicBool::new(false),
        }
    }

    #[test]
    fn concurrent_threads_deliver_every_byte_through_reused_buffers() {
        let (chunk, bufs, bytes) = (64 << 10, 3, (3 << 20) + 12345);
        let src: Vec<u8> = (0..bytes).map(|i| (i * 7 + i / 4093) as u8).collect();
        let buffers: Vec<Mutex<Vec<u8>>> = (0..bufs).map(|_| Mutex::new(vec![0; chunk])).collect();
        let dma = lazy_dma(&buffers, bytes);
        let u = Upload::new(shape(4 << 10, chunk, 16 << 10, bufs), bytes);
        let copy = |off: usize, in_buf: usize, buf: usize, len: usize| {
            buffers[buf].lock().unwrap()[in_buf..in_buf + len]
                .copy_from_slice(&src[off..off + len]);
        };
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| u.work(copy, &dma));
            }
        });
        for b in 0..bufs {
            dma.complete(b);
        }
        assert!(!u.failed());
        assert!(
            !dma.overlapped.load(Ordering::Relaxed),
            "a buffer was reused before its copy completed"
        );
        assert_eq!(
            dma.issued.load(Ordering::Relaxed),
            u.chunks().len(),
            "one DMA per chunk"
        );
        assert!(
            *dma.device.lock().unwrap() == src,
            "the device got the source, byte for byte"
        );
    }

    #[test]
    fn a_buffer_is_waited_for_once_per_reuse_not_once_per_piece() {
        let (chunk, bufs, bytes) = (64 << 10, 2, MIB);
        let src: Vec<u8> = (0..bytes).map(|i| (i * 13 + i / 4093) as u8).collect();
        let buffers: Vec<Mutex<Vec<u8>>> = (0..bufs).map(|_| Mutex::new(vec![0; chunk])).collect();
        let dma = lazy_dma(&buffers, bytes);
        // 16 chunks of 8 pieces each.
        let u = Upload::new(shape(chunk, chunk, 8 << 10, bufs), bytes);
        u.work(
            |off, in_buf, buf, len| {
                buffers[buf].lock().unwrap()[in_buf..in_buf + len]
                    .copy_from_slice(&src[off..off + len])
            },
            &dma,
        );
        for b in 0..bufs {
            dma.complete(b);
        }
        assert_eq!(u.chunks().len(), 16);
        assert_eq!(
            dma.waits.load(Ordering::Relaxed),
            16 - bufs,
            "one wait per chunk that reuses a buffer"
        );
        assert!(*dma.device.lock().unwrap() == src);
    }

    #[test]
    fn a_failed_copy_is_reported_and_nobody_waits_forever() {
        struct Failing;
        impl Dma for Failing {
            fn issue(&self, _: usize, _: usize, _: usize) -> bool {
                false
            }
            fn wait(&self, _: usize) -> bool {
                true
            }
        }
        let u = Upload::new(shape(4 << 10, 16 << 10, 4 << 10, 2), 256 << 10);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| u.work(|_, _, _, _| {}, &Failing));
            }
        });
        assert!(u.failed());
    }
}
