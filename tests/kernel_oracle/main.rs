//! The real kernel agrees with the IR under `sbx run`, or the precision
//! report says why not: random policies over a small tree, and a sample of
//! (operation, path) queries, each answered by a fresh process that `sbx
//! run` sandboxes (this binary in `--probe` mode). The SBPL side of the
//! same property is tests/sbpl_oracle.rs.
//!
//! Own harness (`harness = false`): the binary is also the probe.

#[cfg(target_os = "linux")]
mod oracle;

#[cfg(target_os = "linux")]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--probe") {
        println!("{}", oracle::probe(&args[2], &args[3]));
        return;
    }
    if args.iter().any(|a| a == "--list") {
        println!("kernel_agrees_with_the_ir: test");
        return;
    }
    let abi = sbx::runtime::linux::kernel_abi();
    if abi < 1 {
        // Without Landlock nothing is enforced, and `sbx run` says so.
        println!("kernel_oracle: SKIPPED: no Landlock on this kernel");
        return;
    }
    println!("\nrunning 1 test");
    let cases = oracle::run();
    println!("test kernel_agrees_with_the_ir ... ok ({cases} policies)");
    println!("\ntest result: ok. 1 passed; 0 failed");
}

#[cfg(not(target_os = "linux"))]
fn main() {}
