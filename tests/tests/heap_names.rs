//! Heap blocks named by the pointer their allocation stored them in: C programs linked against
//! the bundled runtime (whose runtime API names no variable, like GCC) run with libaccprof
//! LD_PRELOADed, and the trace and `accprof report` name each transfer as the allocation's
//! statement does (`a[0:12288]`, `b[0:N]`), with the section a clause takes.

use accprof_abi::acc_event_t;
use accprof_integration_tests::*;
use accprof_trace::{EventFlags, Field, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Compiles tests/programs/<name> against the shim's libaccshim.so and openacc.h.
fn compile_against_shim(name: &str, dir: &Path) -> PathBuf {
    let shim = artifact("libaccshim.so");
    let lib_dir = shim.parent().expect("a directory").to_path_buf();
    let exe = dir.join(name.trim_end_matches(".c"));
    let out = Command::new("gcc")
        .args(["-O1", "-g", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(program_source(name))
        .arg("-I")
        .arg(workspace_root().join("runtime-shim/include"))
        .arg(format!("-L{}", lib_dir.display()))
        .args(["-laccshim", "-lm", "-lpthread"])
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .output()
        .expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc failed on {name}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Line numbers of the `SITE:<tag>` markers in a test program.
fn site_lines(name: &str) -> BTreeMap<String, i64> {
    let src = std::fs::read_to_string(program_source(name)).expect("read source");
    src.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let tag = l.split("SITE:").nth(1)?.split_whitespace().next()?;
            Some((tag.to_string(), i as i64 + 1))
        })
        .collect()
}

/// `<tag> <address>` lines the programs print for each transfer.
fn printed_addresses(out: &Output) -> BTreeMap<String, u64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (tag, addr) = l.split_once(' ')?;
            Some((
                tag.to_string(),
                u64::from_str_radix(addr.trim_start_matches("0x"), 16).ok()?,
            ))
        })
        .collect()
}

/// The name given to the first upload of host address `addr`.
fn upload_name(t: &Trace, addr: u64) -> Option<String> {
    let e = t.events.iter().find(|e| {
        e.kind == acc_event_t::ENQUEUE_UPLOAD_START && e.get(Field::HostPtr) == Some(addr)
    })?;
    t.str(e.var_name()).map(str::to_owned)
}

fn report(trace: &Path) -> String {
    let out = Command::new(accprof_cli())
        .arg("report")
        .arg(trace)
        .output()
        .expect("accprof runs");
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn transfers_of_heap_blocks_are_named_by_their_allocation_line() {
    let dir = scratch("heap-names");
    let exe = compile_against_shim("heap_names.c", &dir);
    let trace = dir.join("t.trace");
    let out = run_profiled(&exe, &[], Load::Preload, &trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let addr = printed_addresses(&out);
    assert_eq!(
        addr.get("reused"),
        Some(&1),
        "glibc gave the freed block's address to the next allocation: the reuse case is tested"
    );
    let t = load(&trace);
    // Each allocation's statement (tests/programs/heap_names.c): `double *a = malloc(BYTES)`
    // (a macro: the count from the bytes and the type), `calloc(N, sizeof(double))`,
    // `posix_memalign(&cv, 4096, BYTES)` into a `void *` (no element type: no section),
    // `d = realloc(d, BYTES)`, and the block allocated where a freed one was.
    let names = [
        ("malloc", "a[0:12288]"),
        ("calloc", "b[0:N]"),
        ("posix_memalign", "cv"),
        ("realloc", "d[0:12288]"),
        ("reuse", "e[0:12288]"),
    ];
    for (tag, want) in names {
        assert_eq!(upload_name(&t, addr[tag]).as_deref(), Some(want), "{tag}");
    }
    assert_eq!(
        upload_name(&t, addr["global"]).as_deref(),
        Some("global_arr")
    );
    // acc_update_device(a + 1024, 4096 doubles): elements 1024.. of the malloc'd block.
    assert_eq!(
        upload_name(&t, addr["partial"]).as_deref(),
        Some("a[1024:4096]")
    );
    // Named by accprof, not the runtime; the runtime's create/delete events too.
    let heap_named: Vec<_> = t
        .events
        .iter()
        .filter(|e| t.str(e.var_name()).is_some_and(|n| n.starts_with("a[")))
        .collect();
    assert!(heap_named
        .iter()
        .all(|e| e.flags().contains(EventFlags::ATTRIBUTED_NAME)));
    assert!(
        heap_named.iter().any(|e| e.kind == acc_event_t::CREATE),
        "data events besides transfers are named"
    );
    assert!(
        !t.events.iter().any(|e| t
            .str(e.var_name())
            .is_some_and(|n| n.starts_with("f[") || n == "f")),
        "nothing is named after the freed block"
    );
    assert!(
        t.header.extra.iter().any(|(k, _)| k == "heap_names"),
        "{:?}",
        t.header.extra
    );

    let r = report(&trace);
    for (tag, want) in names {
        assert!(r.contains(&format!("{want} ")), "{tag} in\n{r}");
    }
    assert!(r.contains("a[1024:4096]"), "{r}");
    assert!(r.contains("global_arr"), "{r}");
}

#[test]
fn heap_naming_off_or_without_preload_names_no_block() {
    let dir = scratch("heap-off");
    let exe = compile_against_shim("heap_names.c", &dir);
    /// (name, how the tool is loaded, environment)
    type Case<'a> = (&'a str, Load, &'a [(&'a str, &'a str)]);
    let cases: [Case; 3] = [
        ("off", Load::Preload, &[("ACCPROF_HEAP", "off")]),
        ("proflib", Load::Proflib, &[]),
        ("proflib-on", Load::Proflib, &[("ACCPROF_HEAP", "on")]),
    ];
    for (case, load, env) in cases {
        let trace = dir.join(format!("{case}.trace"));
        let out = run_profiled(&exe, &[], load, &trace, env);
        assert!(out.status.success(), "{case}: {}", stderr(&out));
        let err = stderr(&out);
        if case == "proflib-on" {
            assert!(
                err.contains("ACCPROF_HEAP=on") && err.contains("LD_PRELOAD"),
                "{case}: says why not: {err}"
            );
        } else {
            assert!(!err.contains("ACCPROF_HEAP"), "{case}: {err}");
        }
        let addr = printed_addresses(&out);
        let t = load_named(&trace);
        assert!(
            t.events.iter().all(|e| e.get(Field::AllocSite).is_none()),
            "{case}"
        );
        assert!(upload_name(&t, addr["malloc"]).is_none(), "{case}");
        assert_eq!(
            upload_name(&t, addr["global"]).as_deref(),
            Some("global_arr"),
            "{case}: the symbol table still names globals"
        );
    }
}

fn load_named(trace: &Path) -> Trace {
    load(trace)
}

#[test]
fn many_threads_allocating_get_correct_memory_and_named_transfers() {
    let dir = scratch("heap-stress");
    let exe = compile_against_shim("heap_stress.c", &dir);
    let trace = dir.join("t.trace");
    let out = run_profiled(&exe, &["threads"], Load::Preload, &trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
    assert!(!stderr(&out).contains("LOST"), "{}", stderr(&out));
    let t = load(&trace);
    let after = printed_addresses(&out)["after"];
    // `double *after = malloc(bytes); /* SITE:after */`, 128 KiB of doubles.
    assert!(site_lines("heap_stress.c").contains_key("after"));
    assert_eq!(upload_name(&t, after).as_deref(), Some("after[0:16384]"));
}

#[test]
fn an_overflowing_queue_is_reported_and_names_nothing_after_it() {
    let dir = scratch("heap-overflow");
    let exe = compile_against_shim("heap_stress.c", &dir);
    let trace = dir.join("t.trace");
    let out = run_profiled(&exe, &["overflow"], Load::Preload, &trace, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
    assert!(
        stderr(&out).contains("heap allocation records LOST"),
        "{}",
        stderr(&out)
    );
    let t = load(&trace);
    let lost = t
        .events
        .iter()
        .find(|e| e.kind == accprof_trace::model::tool::HEAP_RECORDS_LOST)
        .expect("the loss is in the trace");
    assert!(lost.bytes().is_some_and(|n| n > 0));
    let after = printed_addresses(&out)["after"];
    assert!(
        upload_name(&t, after).is_none(),
        "{:?}",
        upload_name(&t, after)
    );
    assert!(t
        .events
        .iter()
        .filter(|e| e.start_ns >= lost.start_ns)
        .all(|e| e.get(Field::AllocSite).is_none()));
}
