//! GCC's OpenACC ABI (the GOACC_* entry points of libgomp that `gcc -fopenacc` code calls), so
//! that `LD_PRELOAD=libaccshim.so ./app` runs an unmodified GCC-compiled program on the shim:
//! entry points and their trampolines (entry.rs), reading variadic arguments (varargs.rs), the
//! map kinds (kinds.rs) and what each does (mapping.rs), compute constructs (compute.rs), the
//! construct functions' names (names.rs), the registered offload images (images.rs), `acc
//! declare` in functions (declare.rs) and of globals (globals.rs, found by var_tables.rs).

pub mod by_value;
pub mod compute;
pub mod declare;
pub mod directive;
pub mod entry;
pub mod fallback;
pub mod globals;
pub mod images;
pub mod kinds;
pub mod mapping;
pub mod names;
pub mod var_tables;
pub mod varargs;
