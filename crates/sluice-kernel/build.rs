//! Compiles the BPF side (`bpf/sluice.bpf.c`) with clang into `$OUT_DIR/sluice.bpf.o`, which the crate
//! embeds, the benchmark's floor program (`bpf/floor.bpf.c`) into `$OUT_DIR/floor.bpf.o`, and the
//! datapath-program interpreter's test harness (`bpf/program.bpf.c`) into `$OUT_DIR/program.bpf.o`; the
//! interpreter itself (`bpf/program.h`) goes into both `sluice` and `program`. The kernel
//! types come from `vmlinux.h`, generated here from the running kernel's BTF with bpftool (CO-RE
//! relocations make the object portable to other kernels with BTF).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The running kernel's BTF, the source of `vmlinux.h`.
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// libbpf's BPF-side headers (Debian package libbpf-dev).
const BPF_HELPERS: &str = "/usr/include/bpf/bpf_helpers.h";

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let bpf_dir = manifest.join("bpf");
    println!("cargo:rerun-if-changed={}", bpf_dir.join("sluice.bpf.c").display());
    println!("cargo:rerun-if-changed={}", bpf_dir.join("sluice.h").display());
    println!("cargo:rerun-if-changed={}", bpf_dir.join("floor.bpf.c").display());
    println!("cargo:rerun-if-changed={}", bpf_dir.join("program.bpf.c").display());
    println!("cargo:rerun-if-changed={}", bpf_dir.join("program.h").display());
    println!("cargo:rerun-if-env-changed=SLUICE_CLANG");
    println!("cargo:rerun-if-env-changed=SLUICE_BPF_CFLAGS");

    let clang = env::var("SLUICE_CLANG").unwrap_or_else(|_| "clang".into());
    require_tool(&clang, "clang", "clang llvm");
    require_tool("bpftool", "bpftool", "bpftool");
    require_file(BPF_HELPERS, "libbpf's BPF headers", "libbpf-dev");
    require_file(VMLINUX_BTF, "the kernel's BTF (CONFIG_DEBUG_INFO_BTF)", "a kernel built with BTF");

    let vmlinux = out.join("vmlinux.h");
    let dump = Command::new("bpftool")
        .args(["btf", "dump", "file", VMLINUX_BTF, "format", "c"])
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run bpftool: {e}")));
    if !dump.status.success() {
        fail(&format!("bpftool btf dump failed: {}", String::from_utf8_lossy(&dump.stderr)));
    }
    std::fs::write(&vmlinux, dump.stdout).unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", vmlinux.display())));

    for name in ["sluice", "floor", "program"] {
        compile(&clang, &bpf_dir, &out, name);
    }
}

/// Compiles `bpf/NAME.bpf.c` into `$OUT_DIR/NAME.bpf.o`.
fn compile(clang: &str, bpf_dir: &Path, out: &Path, name: &str) {
    let source = bpf_dir.join(format!("{name}.bpf.c"));
    let object = out.join(format!("{name}.bpf.o"));
    let status = Command::new(clang)
        .args(["-g", "-O2", "-target", "bpf", "-D__TARGET_ARCH_x86", "-Wall", "-Werror"])
        .args(env::var("SLUICE_BPF_CFLAGS").unwrap_or_default().split_whitespace())
        .arg(format!("-I{}", out.display()))
        .arg(format!("-I{}", bpf_dir.display()))
        .arg("-c")
        .arg(&source)
        .arg("-o")
        .arg(&object)
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run {clang}: {e}")));
    if !status.success() {
        fail(&format!("clang could not compile {} (see the errors above)", source.display()));
    }
}

/// Stops the build with a message naming the missing tool and the packages that provide it.
fn require_tool(tool: &str, what: &str, packages: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !found {
        fail(&format!(
            "{what} (`{tool}`) is missing: it compiles sluice's BPF datapath. Run ./scripts/setup.sh as root, \
             or install the Debian packages: {packages}"
        ));
    }
}

fn require_file(path: &str, what: &str, provider: &str) {
    if !Path::new(path).exists() {
        fail(&format!("{what} ({path}) is missing; it comes with {provider}. Run ./scripts/setup.sh as root"));
    }
}

fn fail(message: &str) -> ! {
    eprintln!("error: sluice-kernel: {message}");
    panic!("sluice-kernel: {message}");
}
