//! The CUDA toolkit's header folders, for `#include <…>` (opt-in: `--system-includes`,
//! `[frontend] system-includes = true`, the editors' `systemIncludes`).
//!
//! Off by default because the front end reads every header it can find: with the toolkit's
//! folders, `#include <cuda_runtime.h>` pulls in dozens of large headers (up to the
//! preprocessor's limits of 64 files and 4 MiB each), which slows every check, and their macros
//! can change which branch of an `#if` a file takes, so verdicts of files that did not need
//! them could change. Files that include the toolkit for types or macros they use turn it on.
//!
//! Looked for, in order, each kept when it exists: `$CUDA_PATH/include`, `$CUDA_HOME/include`,
//! `/usr/local/cuda/include`, and Debian's `nvidia-cuda-toolkit` layout: `/usr/include` when
//! `cuda_runtime.h` is there (CUB and Thrust, `/usr/include/cub` and `/usr/include/thrust`,
//! are then found as `<cub/…>` and `<thrust/…>`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The toolkit's include folders on this machine.
pub fn cuda_include_dirs() -> Vec<PathBuf> {
    find(|name| std::env::var_os(name), Path::new("/"))
}

/// Adds the toolkit's folders after the include folders `opts` has (they are searched last).
pub fn add_to(opts: &mut crate::Options) {
    for dir in cuda_include_dirs() {
        if !opts.frontend.include_dirs.contains(&dir) {
            opts.frontend.include_dirs.push(dir);
        }
    }
}

/// The search, with the environment and the file-system root given (for tests).
pub fn find(env: impl Fn(&str) -> Option<OsString>, root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |dir: PathBuf| {
        if dir.is_dir() && !out.contains(&dir) {
            out.push(dir);
        }
    };
    for var in ["CUDA_PATH", "CUDA_HOME"] {
        if let Some(v) = env(var).filter(|v| !v.is_empty()) {
            add(PathBuf::from(v).join("include"));
        }
    }
    add(root.join("usr/local/cuda/include"));
    let debian = root.join("usr/include");
    if debian.join("cuda_runtime.h").is_file() {
        add(debian);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_root(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cudarace-sysinc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    #[test]
    fn environment_then_usr_local_then_debian() {
        let root = temp_root("all");
        let toolkit = root.join("opt/cuda-12");
        std::fs::create_dir_all(toolkit.join("include")).expect("dir");
        std::fs::create_dir_all(root.join("usr/local/cuda/include")).expect("dir");
        std::fs::create_dir_all(root.join("usr/include/cub")).expect("dir");
        // /usr/include counts only when the toolkit's headers are there.
        let env = |name: &str| (name == "CUDA_HOME").then(|| toolkit.clone().into_os_string());
        assert_eq!(
            find(env, &root),
            [toolkit.join("include"), root.join("usr/local/cuda/include")]
        );
        std::fs::write(root.join("usr/include/cuda_runtime.h"), "").expect("write");
        assert_eq!(
            find(env, &root),
            [
                toolkit.join("include"),
                root.join("usr/local/cuda/include"),
                root.join("usr/include"),
            ]
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn nothing_installed_is_nothing() {
        let root = temp_root("none");
        let env = |name: &str| (name == "CUDA_PATH").then(|| OsString::from("/does/not/exist"));
        assert!(find(env, &root).is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }
}
