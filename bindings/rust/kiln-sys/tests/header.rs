// The hand-written declarations against include/kiln/kiln.h: the same functions, and (where a C
// compiler is present) the same sizes and field offsets of every struct.
use kiln_sys::*;
use std::collections::BTreeSet;
use std::mem::{size_of, MaybeUninit};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

// Names `kiln_*` directly followed by '(' on lines of `text` that contain `marker`.
fn functions(text: &str, marker: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines().filter(|l| l.contains(marker)) {
        for (at, _) in line.match_indices("kiln_") {
            let rest = &line[at..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            if rest[end..].starts_with('(') {
                out.insert(rest[..end].to_string());
            }
        }
    }
    out
}

#[test]
fn every_function_of_the_header_is_declared() {
    let header = std::fs::read_to_string(root().join("include/kiln/kiln.h")).unwrap();
    let ours = std::fs::read_to_string(root().join("bindings/rust/kiln-sys/src/lib.rs")).unwrap();
    let c = functions(&header, "KILN_API");
    let rust = functions(&ours, "pub fn kiln_");
    let inline: BTreeSet<String> = ["kiln_node", "kiln_scalar"].iter().map(|s| s.to_string()).collect();
    assert!(c.len() >= 38, "found only {} functions in kiln.h: {:?}", c.len(), c);
    let missing: Vec<_> = c.difference(&rust).collect();
    let extra: Vec<_> = rust.difference(&c).filter(|f| !inline.contains(*f)).collect();
    assert!(missing.is_empty(), "kiln.h declares these, kiln-sys does not: {:?}", missing);
    assert!(extra.is_empty(), "kiln-sys declares these, kiln.h does not: {:?}", extra);
    let header_abi = header.lines().find_map(|l| l.strip_prefix("#define KILN_ABI_VERSION ")).unwrap();
    assert_eq!(header_abi.trim(), KILN_ABI_VERSION.to_string());
}

macro_rules! offsets {
    ($t:ty; $($f:ident).+) => {{
        let u = MaybeUninit::<$t>::uninit();
        let base = u.as_ptr() as usize;
        // SAFETY: addr_of! on a field of uninitialized memory computes an address, reads nothing.
        unsafe { std::ptr::addr_of!((*u.as_ptr()).$($f).+) as usize - base }
    }};
}

#[test]
fn structs_have_the_header_layout() {
    let ours = format!(
        "kiln_tensor {} {} {} {} {} {} {}\nkiln_arg {} {} {} {}\nkiln_operand {} {} {}\n\
         kiln_cache_stats {} {} {} {}\n",
        size_of::<kiln_tensor>(),
        offsets!(kiln_tensor; data),
        offsets!(kiln_tensor; byte_offset),
        offsets!(kiln_tensor; dtype),
        offsets!(kiln_tensor; rank),
        offsets!(kiln_tensor; shape),
        offsets!(kiln_tensor; strides),
        size_of::<kiln_arg>(),
        offsets!(kiln_arg; is_scalar),
        offsets!(kiln_arg; node),
        offsets!(kiln_arg; scalar),
        size_of::<kiln_operand>(),
        offsets!(kiln_operand; tensor),
        offsets!(kiln_operand; scalar),
        size_of::<kiln_cache_stats>(),
        offsets!(kiln_cache_stats; compile_ms),
        offsets!(kiln_cache_stats; remote_hits),
        offsets!(kiln_cache_stats; remote_waits),
    );
    let program = r#"#include <kiln/kiln.h>
#include <stddef.h>
#include <stdio.h>
#define O(t, f) (int)offsetof(t, f)
int main(void) {
  printf("kiln_tensor %d %d %d %d %d %d %d\n", (int)sizeof(kiln_tensor), O(kiln_tensor, data),
         O(kiln_tensor, byte_offset), O(kiln_tensor, dtype), O(kiln_tensor, rank),
         O(kiln_tensor, shape), O(kiln_tensor, strides));
  printf("kiln_arg %d %d %d %d\n", (int)sizeof(kiln_arg), O(kiln_arg, is_scalar), O(kiln_arg, node),
         O(kiln_arg, scalar));
  printf("kiln_operand %d %d %d\n", (int)sizeof(kiln_operand), O(kiln_operand, tensor),
         O(kiln_operand, scalar));
  printf("kiln_cache_stats %d %d %d %d\n", (int)sizeof(kiln_cache_stats),
         O(kiln_cache_stats, compile_ms), O(kiln_cache_stats, remote_hits),
         O(kiln_cache_stats, remote_waits));
  return 0;
}
"#;
    let dir = std::env::temp_dir().join(format!("kiln-sys-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("layout.c"), program).unwrap();
    let built = Command::new("cc")
        .args(["-std=c99", "-I"])
        .arg(root().join("include"))
        .arg(dir.join("layout.c"))
        .arg("-o")
        .arg(dir.join("layout"))
        .status();
    match built {
        Ok(s) if s.success() => {}
        _ => {
            eprintln!("structs_have_the_header_layout: SKIPPED, no working C compiler (cc)");
            return;
        }
    }
    let out = Command::new(dir.join("layout")).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), ours);
}
