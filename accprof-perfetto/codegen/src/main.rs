//! Compiles accprof-perfetto's vendored Perfetto protos with protox (a protobuf compiler written
//! in Rust, so no protoc is needed) and writes the prost code into accprof-perfetto/src/protos/.

use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let crate_dir = manifest_dir.parent().unwrap_or(&manifest_dir).to_path_buf();
    let proto_root = crate_dir.join("proto");
    let out_dir = crate_dir.join("src").join("protos");
    let files = ["protos/perfetto/trace/trace.proto"];
    let descriptors = match protox::compile(files, [&proto_root]) {
        Ok(set) => set,
        Err(err) => {
            eprintln!("accprof-perfetto-codegen: {err}");
            std::process::exit(1);
        }
    };
    let mut config = prost_build::Config::new();
    config.out_dir(&out_dir);
    if let Err(err) = config.compile_fds(descriptors) {
        eprintln!("accprof-perfetto-codegen: {err}");
        std::process::exit(1);
    }
    println!("wrote {}", out_dir.join("perfetto.protos.rs").display());
}
