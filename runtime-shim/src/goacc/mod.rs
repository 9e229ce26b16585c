//! GCC's OpenACC ABI (the GOACC_* entry points of libgomp that `gcc -fopenacc` code calls), so
//! that `LD_PRELOAD=libaccshim.so ./app` runs an unmodified GCC-compiled program on the shim:
//! entry points and their trampolines (entry.rs), reading variadic arguments (varargs.rs), the
//! map kinds (kinds.rs) and what each does (mapping.rs), compute constructs (compute.rs), the
//! construct functions' names (names.rs) and the registered offload images (images.rs).

pub mod by_value;
pub mod compute;
pub mod directive;
pub mod entry;
pub mod fallback;
pub mod images;
pub mod kinds;
pub mod mapping;
pub mod names;
pub mod varargs;
