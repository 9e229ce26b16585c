//! Exports the examples' and tests' symbols dynamically, so that a preloaded tool can find
//! `acc_prof_register` (and the runtime API) with dlsym(RTLD_DEFAULT, ...) from its constructor,
//! as it can in a C program linked against libaccshim.so.
fn main() {
    println!("cargo:rustc-link-arg-examples=-Wl,--export-dynamic");
    println!("cargo:rustc-link-arg-tests=-Wl,--export-dynamic");
}
