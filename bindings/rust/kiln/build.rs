// This crate's tests and examples find libkiln.so where kiln-sys linked it, without
// LD_LIBRARY_PATH (a dependency's link arguments do not reach its dependents' binaries).
fn main() {
    if let Some(dir) = std::env::var_os("DEP_KILN_LIB_DIR") {
        let dir = dir.to_string_lossy();
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", dir);
    }
}
