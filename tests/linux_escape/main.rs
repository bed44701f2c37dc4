//! Escape tests for `sbx run` on Linux, against the real kernel.
//!
//! Each case compiles a policy and runs the real `sbx run` on this test
//! binary in probe mode (`--probe OP ARGS`): a fresh process performs one
//! system call and prints `OK` or the errno's name. Every denial is paired
//! with a positive control under the same policy, so a broken sandbox (or
//! a broken probe) cannot pass by failing everything.
//!
//! Own harness (`harness = false`): the binary is also the probe.

#[cfg(target_os = "linux")]
mod cases;
#[cfg(target_os = "linux")]
mod fixture;
#[cfg(target_os = "linux")]
mod guard_cases;
#[cfg(target_os = "linux")]
mod listen_cases;
#[cfg(target_os = "linux")]
mod ns_cases;
#[cfg(target_os = "linux")]
mod pin_cases;
#[cfg(target_os = "linux")]
mod privilege_cases;
#[cfg(target_os = "linux")]
mod probe;
#[cfg(target_os = "linux")]
mod protect_cases;

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--probe") {
        probe::main(&args[2..]);
    }
    // libtest-style flags are accepted and ignored; the first other
    // argument filters cases by substring.
    let filter = args[1..].iter().find(|a| !a.starts_with('-')).cloned();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in cases::ALL {
            println!("{name}: test");
        }
        return;
    }
    let abi = sbx::runtime::linux::kernel_abi();
    if abi < 6 {
        println!(
            "linux_escape: SKIPPED: these tests need Landlock ABI >= 6, this kernel has ABI {abi}"
        );
        return;
    }
    let selected: Vec<_> = cases::ALL
        .iter()
        .filter(|(n, _)| filter.as_deref().is_none_or(|f| n.contains(f)))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, case) in &selected {
        let fx = fixture::Fx::new();
        match case(&fx) {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                println!("test {name} ... FAILED\n{e}\n");
                failed.push(*name);
            }
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len()
    );
    if !failed.is_empty() {
        println!("failures: {}", failed.join(", "));
        std::process::exit(101);
    }
}

#[cfg(not(target_os = "linux"))]
fn main() {}
