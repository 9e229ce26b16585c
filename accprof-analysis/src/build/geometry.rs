//! Launch geometry from kernel device records, and the devices' limits (device properties
//! events), joined to the kernel rows by kernel name at the end.

use super::*;
use crate::occupancy::{occupancy, DeviceLimits};

impl ProfileBuilder {
    /// A device properties event (kind 1004): kept until the strings are complete.
    pub(super) fn note_device_properties(&mut self, ev: &Event) {
        if let (Some(dev), Some(text)) = (
            ev.get_i64(Field::DeviceNumber),
            ev.get_str(Field::DeviceProperties),
        ) {
            self.device_properties.push((dev, text));
        }
    }

    /// A kernel record's grid, block, registers and shared memory, by kernel name.
    pub(super) fn note_launch_geometry(&mut self, ev: &Event) {
        if ev.kind != device::KERNEL {
            return;
        }
        let (Some(name), Some(grid), Some(block)) = (
            ev.kernel_name(),
            ev.get(Field::GridDim),
            ev.get(Field::BlockDim),
        ) else {
            return;
        };
        let g = self.launch_geometry.entry(name).or_default();
        let grid = device::split_dim3(grid);
        let block = device::split_dim3(block);
        let first = g.launches == 0;
        let add = |r: &mut ValueRange, v: u64| {
            if first {
                *r = ValueRange { min: v, max: v };
            } else {
                r.min = r.min.min(v);
                r.max = r.max.max(v);
            }
        };
        for (r, v) in g.grid.iter_mut().zip([grid.0, grid.1, grid.2]) {
            add(r, v);
        }
        for (r, v) in g.block.iter_mut().zip([block.0, block.1, block.2]) {
            add(r, v);
        }
        add(&mut g.blocks, grid.0 * grid.1 * grid.2);
        add(&mut g.threads_per_block, block.0 * block.1 * block.2);
        add(
            &mut g.registers_per_thread,
            ev.get(Field::Registers).unwrap_or(0),
        );
        add(
            &mut g.shared_mem_bytes,
            ev.get(Field::SharedMem).unwrap_or(0),
        );
        if first {
            g.device = ev.get_i64(Field::DeviceNumber);
        }
        g.launches += 1;
    }

    /// The devices' limits, by ordinal, from the properties events (the first of each device).
    pub(super) fn device_limits(&self, strings: &StringTable) -> Vec<DeviceLimits> {
        let mut out: Vec<DeviceLimits> = Vec::new();
        for &(dev, text) in &self.device_properties {
            if out.iter().any(|d| d.device == dev) {
                continue;
            }
            if let Some(d) = strings.get(text).and_then(|t| DeviceLimits::parse(dev, t)) {
                out.push(d);
            }
        }
        out.sort_by_key(|d| d.device);
        out
    }
}

/// Gives each kernel row the geometry of the kernel records of its name (the runtime's name
/// and CUPTI's are the same text under different string ids), with its occupancy on its device.
pub(super) fn attach(
    kernels: &mut [Kernel],
    devices: &[DeviceLimits],
    by_id: HashMap<StrId, LaunchGeometry>,
    strings: &StringTable,
) {
    let mut by_name: HashMap<&str, LaunchGeometry> = HashMap::default();
    for (id, g) in by_id {
        let Some(name) = strings.get(id) else {
            continue;
        };
        match by_name.get_mut(name) {
            None => {
                by_name.insert(name, g);
            }
            Some(o) => merge(o, &g),
        }
    }
    for k in kernels {
        let Some(mut g) = by_name.get(k.name.as_str()).cloned() else {
            continue;
        };
        if let Some(d) = devices.iter().find(|d| Some(d.device) == g.device) {
            g.multiprocessors = Some(d.multiprocessors);
            g.occupancy = occupancy(
                d,
                g.threads_per_block.max,
                g.registers_per_thread.max,
                g.shared_mem_bytes.max,
            );
        }
        k.geometry = Some(g);
    }
}

fn merge(o: &mut LaunchGeometry, g: &LaunchGeometry) {
    let m = |a: &mut ValueRange, b: &ValueRange| {
        a.min = a.min.min(b.min);
        a.max = a.max.max(b.max);
    };
    for (a, b) in o.grid.iter_mut().zip(&g.grid) {
        m(a, b);
    }
    for (a, b) in o.block.iter_mut().zip(&g.block) {
        m(a, b);
    }
    m(&mut o.blocks, &g.blocks);
    m(&mut o.threads_per_block, &g.threads_per_block);
    m(&mut o.registers_per_thread, &g.registers_per_thread);
    m(&mut o.shared_mem_bytes, &g.shared_mem_bytes);
    o.launches += g.launches;
    o.device = o.device.or(g.device);
}
