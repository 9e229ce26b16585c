//! Device memory released while work queued before the release may still use it.
//!
//! A program releases a device copy (the end of a data region, exit data, acc_delete, acc_free)
//! on one queue while kernels or copies it queued earlier on other queues may still read or
//! write it: a program with such a race is wrong, but the runtime must not hand the memory out
//! again, or give it back, under that work (on the emulated device, whose memory is the host's,
//! that corrupted the program's heap). A GPU's driver keeps freed memory alive until the work
//! queued before the free is done; the backends do the same with this list: each block waits
//! for a mark on every queue that was busy when it was released (the count of jobs submitted
//! there, or an event recorded there), and is given back once all of them are reached.

use std::sync::Mutex;

/// Blocks `B` waiting for marks `W`.
pub struct Deferred<W, B> {
    items: Mutex<Vec<(Vec<W>, B)>>,
}

impl<W, B> Default for Deferred<W, B> {
    fn default() -> Self {
        Deferred {
            items: Mutex::new(Vec::new()),
        }
    }
}

impl<W, B> Deferred<W, B> {
    /// Holds `block` until every mark in `marks` is reached.
    pub fn push(&self, marks: Vec<W>, block: B) {
        self.lock().push((marks, block));
    }

    /// Removes and returns the blocks whose marks `reached` all says are reached (with their
    /// marks, for the caller to dispose of).
    pub fn ready(&self, reached: impl Fn(&W) -> bool) -> Vec<(Vec<W>, B)> {
        let mut items = self.lock();
        if items.is_empty() {
            return Vec::new();
        }
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut *items)
            .into_iter()
            .partition(|(marks, _)| marks.iter().all(&reached));
        *items = waiting;
        done
    }

    /// Removes and returns every block (at shutdown, once the device is idle).
    pub fn take_all(&self) -> Vec<(Vec<W>, B)> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Vec<W>, B)>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_comes_back_once_all_its_marks_are_reached() {
        let d: Deferred<u32, &str> = Deferred::default();
        d.push(vec![1, 2], "a");
        d.push(vec![1], "b");
        d.push(vec![], "c");
        let reached = |m: &u32| *m == 1;
        let mut out: Vec<_> = d.ready(reached).into_iter().map(|(_, b)| b).collect();
        out.sort_unstable();
        assert_eq!(out, ["b", "c"]);
        assert!(d.ready(reached).is_empty());
        assert_eq!(d.take_all().len(), 1);
    }
}
