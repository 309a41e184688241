// Where libkiln.so is: $KILN_LIB_DIR, else the repository's own build (build/lib). Nothing is
// compiled here: kiln compiles its kernels at run time.
use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=KILN_LIB_DIR");
    let dir = match env::var_os("KILN_LIB_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../../build/lib"),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    if !dir.join("libkiln.so").exists() {
        println!(
            "cargo:warning=no libkiln.so in {}: build kiln (scripts/build.sh) or set KILN_LIB_DIR",
            dir.display()
        );
    }
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=kiln");
    // This crate's own tests find the library without LD_LIBRARY_PATH.
    println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", dir.display());
    // Dependents' build scripts read it as DEP_KILN_LIB_DIR (kiln's tests get an rpath from it).
    println!("cargo:lib_dir={}", dir.display());
}
