//! Naming a transfer after the heap block it lay in: the pointer its allocation's statement
//! stores it in, with debug information and the source at hand, `heap@module+0xoff` without,
//! with the section when the transfer covers part of the block; OpenACC data events as well as
//! device copies.

use accprof_abi::acc_event_t;
use accprof_symbols::{unnamed_host_data, Symbolizer};
use accprof_trace::{device, Event, EventFlags, Field, Module, StringTable};
use std::process::Command;

/// Builds a program whose `main` calls malloc on line 3; returns (exe, return address of that
/// call) for a non-PIE build, where file addresses are run-time addresses.
fn program(dir: &std::path::Path, debug: bool) -> (String, u64) {
    let src = dir.join("alloc.c");
    std::fs::write(&src, "#include <stdlib.h>\nint main(void) {\n    char *p = malloc(1 << 20);\n    return p == 0;\n}\n").unwrap();
    let exe = dir.join(if debug { "alloc_g" } else { "alloc" });
    let mut cmd = Command::new("gcc");
    cmd.args(["-O0", "-no-pie", "-o"]).arg(&exe).arg(&src);
    if debug {
        cmd.arg("-g");
    }
    let out = cmd.output().expect("gcc runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The instruction after `call malloc` in main, from the disassembly.
    let dis = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&exe)
        .output()
        .expect("objdump runs");
    let text = String::from_utf8_lossy(&dis.stdout);
    let mut lines = text.lines().skip_while(|l| !l.contains("<main>:"));
    let mut ra = None;
    while let Some(l) = lines.next() {
        if l.contains("call") && l.contains("malloc") {
            let next = lines.next().expect("an instruction after the call");
            ra = Some(u64::from_str_radix(next.trim().split(':').next().unwrap(), 16).unwrap());
            break;
        }
    }
    (
        exe.display().to_string(),
        ra.expect("a call to malloc in main"),
    )
}

fn heap_event(kind: acc_event_t, site: u64, ptr: u64, bytes: u64) -> Event {
    let mut e = Event::new(kind, 1);
    e.set(Field::HostPtr, ptr);
    e.set(Field::Bytes, bytes);
    e.set(Field::AllocSite, site);
    e.set(Field::AllocBase, 0x7f00_0000_0000);
    e.set(Field::AllocBytes, 1 << 20);
    e
}

#[test]
fn heap_blocks_are_named_by_allocation_line_or_module_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut strings = StringTable::default();
    for debug in [true, false] {
        let (exe, ra) = program(dir.path(), debug);
        let module = Module {
            path: exe,
            bias: 0,
            start: 0x400000,
            end: 0x500000,
            build_id: Vec::new(),
        };
        let mut sym = Symbolizer::new(&[module]);
        let mut whole = heap_event(
            acc_event_t::ENQUEUE_UPLOAD_START,
            ra,
            0x7f00_0000_0000,
            1 << 20,
        );
        assert!(unnamed_host_data(&whole));
        assert!(sym.annotate_data(&mut whole, &mut strings));
        let name = strings.resolve(whole.var_name()).unwrap().to_string();
        // With debug information, the pointer the allocation's statement stores the block in
        // (`char *p = malloc(1 << 20);`: char elements, no element count in the statement);
        // without, the module and offset, and why there is no name.
        let part_name = if debug {
            assert_eq!(name, "p[0:1048576]");
            "p[4096:64]".to_string()
        } else {
            assert_eq!(name, format!("heap@alloc+{ra:#x} (no line)"));
            format!("heap@alloc+{ra:#x}[+0x1000, 64 bytes] (no line)")
        };
        assert!(whole.flags().contains(EventFlags::ATTRIBUTED_NAME));
        let mut part = heap_event(device::MEMCPY, ra, 0x7f00_0000_1000, 64);
        assert!(sym.annotate_data(&mut part, &mut strings));
        assert_eq!(strings.resolve(part.var_name()), Some(&part_name[..]));
    }
}

#[test]
fn only_unnamed_data_events_with_a_host_pointer_are_candidates() {
    let mut e = Event::new(acc_event_t::CREATE, 1);
    assert!(!unnamed_host_data(&e), "no host_ptr");
    e.set(Field::HostPtr, 0x1000);
    assert!(unnamed_host_data(&e));
    e.set(Field::VarName, 1);
    assert!(!unnamed_host_data(&e), "the runtime named it");
    let mut launch = Event::new(acc_event_t::ENQUEUE_LAUNCH_START, 1);
    launch.set(Field::HostPtr, 0x1000);
    assert!(!unnamed_host_data(&launch));
}
