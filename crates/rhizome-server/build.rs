//! Embeds the console (`console/`: Fauxton and Rhizome's own screens, see
//! `src/console.rs`) in the binary: writes `$OUT_DIR/console_files.rs`, a
//! sorted table of each file's path under `console/` and its bytes
//! (`include_bytes!`), so the server needs no files at run time. A table
//! of our own rather than a crate: twenty lines, no dependency.

use std::path::{Path, PathBuf};

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("console/ is readable").map(|e| e.expect("console/ entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, out);
        } else {
            let rel = path.strip_prefix(root).expect("under console/").to_string_lossy().replace('\\', "/");
            out.push((rel, path));
        }
    }
}

fn main() {
    // Read at run time, not baked in by `env!`: a build script reused from
    // a target folder built elsewhere must look at this checkout's files.
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("console");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    let mut code = String::from("/// Every file under `console/`, sorted by path.\npub static FILES: &[(&str, &[u8])] = &[\n");
    for (rel, path) in &files {
        code.push_str(&format!("    ({rel:?}, include_bytes!({:?})),\n", path.display().to_string()));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("console_files.rs");
    std::fs::write(out, code).expect("OUT_DIR is writable");
}
