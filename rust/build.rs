//! Records the git commit of the source tree the extension is built from (`_core.GIT_COMMIT`,
//! "" outside a git checkout; "-dirty" when tracked files differ), so that a `pip install .`
//! from a checkout still names its commit in the results manifests.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let value = if commit.is_empty() || !dirty {
        commit
    } else {
        format!("{commit}-dirty")
    };
    println!("cargo:rustc-env=PRIVRL_GIT_COMMIT={value}");
    // rebuild when HEAD moves (a commit, a checkout) or the index changes
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        println!("cargo:rerun-if-changed={git_dir}/HEAD");
        println!("cargo:rerun-if-changed={git_dir}/index");
        if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={git_dir}/{head_ref}");
        }
    }
    println!("cargo:rerun-if-changed=rust/build.rs");
}
