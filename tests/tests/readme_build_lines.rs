//! Every `gcc` build line of the README works as written: on the README's Laplace (the seeds'
//! solver, scripts/gpu/laplace.c, whose kernels call fmax and fabs), in a fresh directory, on
//! this machine's compilers. Where GCC's nvptx offload compiler is installed a line without
//! `-foffload=-lm` fails to link the device image (`unresolved symbol fmax`), which this test
//! catches.

use accprof_integration_tests::{scratch, workspace_root};
use std::process::Command;

#[test]
fn every_gcc_line_of_the_readme_builds_the_laplace_solver() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let lines: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("gcc ") && l.contains("laplace.c"))
        .collect();
    assert!(!lines.is_empty(), "no gcc line in the README");
    let dir = scratch("readme-build");
    std::fs::copy(
        workspace_root().join("scripts/gpu/laplace.c"),
        dir.join("laplace.c"),
    )
    .unwrap();
    for line in lines {
        let command = line.split(" #").next().unwrap_or(line).trim();
        let out = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&dir)
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "`{command}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.join("laplace").is_file(), "`{command}` built nothing");
        std::fs::remove_file(dir.join("laplace")).unwrap();
    }
}
