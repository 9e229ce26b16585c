//! The Rust mirror of acc_prof.h has the same layout as the C header the system ships.

use accprof_abi::*;
use std::collections::HashMap;
use std::mem::{offset_of, size_of};
use std::process::Command;

const HEADER_DIR: &str = "/usr/lib/gcc/x86_64-linux-gnu/12/include";

/// Compiles a C program that prints `name value` for every size and offset we check.
fn c_layout() -> HashMap<String, usize> {
    let dir = accprof_integration_tests::scratch("abi");
    let src = dir.join("layout.c");
    let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n#include <acc_prof.h>\n#define S(t) printf(\"sizeof %s %zu\\n\", #t, sizeof(t));\n#define O(t, f) printf(\"%s.%s %zu\\n\", #t, #f, offsetof(t, f));\nint main(void) {\n");
    for (ty, fields) in layout_table() {
        c.push_str(&format!("S({ty})\n"));
        for (f, _) in fields {
            c.push_str(&format!("O({ty}, {f})\n"));
        }
    }
    c.push_str("S(acc_event_t) S(acc_device_t) S(acc_construct_t) S(acc_device_api) S(acc_register_t) S(acc_prof_callback)\n");
    c.push_str("printf(\"acc_ev_last %d\\n\", (int)acc_ev_last); printf(\"acc_construct_serial %d\\n\", (int)acc_construct_serial); printf(\"acc_device_nvidia %d\\n\", (int)acc_device_nvidia); printf(\"version %d\\n\", _ACC_PROF_INFO_VERSION);\n");
    c.push_str("return 0; }\n");
    std::fs::write(&src, c).unwrap();
    let exe = dir.join("layout");
    let out = Command::new("gcc")
        .arg(format!("-I{HEADER_DIR}"))
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

type Table = Vec<(&'static str, Vec<(&'static str, usize)>)>;

/// Every struct and field of the interface with its Rust offset.
fn layout_table() -> Table {
    vec![
        (
            "acc_prof_info",
            vec![
                ("event_type", offset_of!(acc_prof_info, event_type)),
                ("valid_bytes", offset_of!(acc_prof_info, valid_bytes)),
                ("version", offset_of!(acc_prof_info, version)),
                ("device_type", offset_of!(acc_prof_info, device_type)),
                ("device_number", offset_of!(acc_prof_info, device_number)),
                ("thread_id", offset_of!(acc_prof_info, thread_id)),
                ("async", offset_of!(acc_prof_info, async_)),
                ("async_queue", offset_of!(acc_prof_info, async_queue)),
                ("src_file", offset_of!(acc_prof_info, src_file)),
                ("func_name", offset_of!(acc_prof_info, func_name)),
                ("line_no", offset_of!(acc_prof_info, line_no)),
                ("end_line_no", offset_of!(acc_prof_info, end_line_no)),
                ("func_line_no", offset_of!(acc_prof_info, func_line_no)),
                (
                    "func_end_line_no",
                    offset_of!(acc_prof_info, func_end_line_no),
                ),
            ],
        ),
        (
            "acc_data_event_info",
            vec![
                ("event_type", offset_of!(acc_data_event_info, event_type)),
                ("valid_bytes", offset_of!(acc_data_event_info, valid_bytes)),
                (
                    "parent_construct",
                    offset_of!(acc_data_event_info, parent_construct),
                ),
                ("implicit", offset_of!(acc_data_event_info, implicit)),
                ("tool_info", offset_of!(acc_data_event_info, tool_info)),
                ("var_name", offset_of!(acc_data_event_info, var_name)),
                ("bytes", offset_of!(acc_data_event_info, bytes)),
                ("host_ptr", offset_of!(acc_data_event_info, host_ptr)),
                ("device_ptr", offset_of!(acc_data_event_info, device_ptr)),
            ],
        ),
        (
            "acc_launch_event_info",
            vec![
                ("event_type", offset_of!(acc_launch_event_info, event_type)),
                (
                    "valid_bytes",
                    offset_of!(acc_launch_event_info, valid_bytes),
                ),
                (
                    "parent_construct",
                    offset_of!(acc_launch_event_info, parent_construct),
                ),
                ("implicit", offset_of!(acc_launch_event_info, implicit)),
                ("tool_info", offset_of!(acc_launch_event_info, tool_info)),
                (
                    "kernel_name",
                    offset_of!(acc_launch_event_info, kernel_name),
                ),
                ("num_gangs", offset_of!(acc_launch_event_info, num_gangs)),
                (
                    "num_workers",
                    offset_of!(acc_launch_event_info, num_workers),
                ),
                (
                    "vector_length",
                    offset_of!(acc_launch_event_info, vector_length),
                ),
            ],
        ),
        (
            "acc_other_event_info",
            vec![
                ("event_type", offset_of!(acc_other_event_info, event_type)),
                ("valid_bytes", offset_of!(acc_other_event_info, valid_bytes)),
                (
                    "parent_construct",
                    offset_of!(acc_other_event_info, parent_construct),
                ),
                ("implicit", offset_of!(acc_other_event_info, implicit)),
                ("tool_info", offset_of!(acc_other_event_info, tool_info)),
            ],
        ),
        (
            "acc_event_info",
            vec![
                ("event_type", 0),
                ("data_event", 0),
                ("launch_event", 0),
                ("other_event", 0),
            ],
        ),
        (
            "acc_api_info",
            vec![
                ("device_api", offset_of!(acc_api_info, device_api)),
                ("valid_bytes", offset_of!(acc_api_info, valid_bytes)),
                ("device_type", offset_of!(acc_api_info, device_type)),
                ("vendor", offset_of!(acc_api_info, vendor)),
                ("device_handle", offset_of!(acc_api_info, device_handle)),
                ("context_handle", offset_of!(acc_api_info, context_handle)),
                ("async_handle", offset_of!(acc_api_info, async_handle)),
            ],
        ),
    ]
}

fn rust_size(ty: &str) -> usize {
    match ty {
        "acc_prof_info" => size_of::<acc_prof_info>(),
        "acc_data_event_info" => size_of::<acc_data_event_info>(),
        "acc_launch_event_info" => size_of::<acc_launch_event_info>(),
        "acc_other_event_info" => size_of::<acc_other_event_info>(),
        "acc_event_info" => size_of::<acc_event_info>(),
        "acc_api_info" => size_of::<acc_api_info>(),
        "acc_event_t" => size_of::<acc_event_t>(),
        "acc_device_t" => size_of::<acc_device_t>(),
        "acc_construct_t" => size_of::<acc_construct_t>(),
        "acc_device_api" => size_of::<acc_device_api>(),
        "acc_register_t" => size_of::<acc_register_t>(),
        "acc_prof_callback" => size_of::<acc_prof_callback>(),
        other => panic!("no Rust type for {other}"),
    }
}

#[test]
fn every_size_and_offset_matches_the_system_header() {
    let c = c_layout();
    let mut checked = 0;
    for (ty, fields) in layout_table() {
        assert_eq!(c[&format!("sizeof {ty}")], rust_size(ty), "sizeof {ty}");
        checked += 1;
        for (f, off) in fields {
            assert_eq!(c[&format!("{ty}.{f}")], off, "offsetof({ty}, {f})");
            checked += 1;
        }
    }
    for ty in [
        "acc_event_t",
        "acc_device_t",
        "acc_construct_t",
        "acc_device_api",
        "acc_register_t",
        "acc_prof_callback",
    ] {
        assert_eq!(c[&format!("sizeof {ty}")], rust_size(ty), "sizeof {ty}");
        checked += 1;
    }
    assert_eq!(c["acc_ev_last"] as i32, acc_event_t::LAST.0);
    assert_eq!(c["acc_construct_serial"] as i32, acc_construct_t::SERIAL.0);
    assert_eq!(c["acc_device_nvidia"] as i32, acc_device_t::NVIDIA.0);
    assert_eq!(c["version"] as i32, ACC_PROF_INFO_VERSION_2_6);
    assert!(checked > 45);
}

#[test]
fn valid_bytes_constants_match_the_header_macros() {
    let c = c_layout();
    // GCC's _ACC_*_VALID_BYTES: offset of the last field plus its size.
    assert_eq!(
        valid_bytes::PROF_INFO as usize,
        c["acc_prof_info.func_end_line_no"] + 4
    );
    assert_eq!(
        valid_bytes::DATA_EVENT_INFO as usize,
        c["acc_data_event_info.device_ptr"] + 8
    );
    assert_eq!(
        valid_bytes::LAUNCH_EVENT_INFO as usize,
        c["acc_launch_event_info.vector_length"] + 8
    );
    assert_eq!(
        valid_bytes::OTHER_EVENT_INFO as usize,
        c["acc_other_event_info.tool_info"] + 8
    );
    assert_eq!(
        valid_bytes::API_INFO as usize,
        c["acc_api_info.async_handle"] + 8
    );
}
