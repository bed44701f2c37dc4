// The whole build-time job, shared (through `include!`) by this crate's
// build.rs, the `build_profiles` cargo example of sbx, and
// tests/example_build.rs, so that the code they run is the same.

/// Compile `policy` for every target in portable mode and write each
/// artifact into `out_dir` under its usual file name (`profile.sb`,
/// `linux.json`, ...). An invalid policy, or a target that cannot honour
/// it (`enforcement = "required"` with a rule the target cannot express),
/// is an error carrying the human report, and then nothing is written: a
/// build must not ship a profile set with a hole in it.
pub fn generate(policy: &std::path::Path, out_dir: &std::path::Path) -> Result<(), String> {
    use sbx::compile::{self, Inputs, Options, Target};

    let text = std::fs::read_to_string(policy)
        .map_err(|e| format!("cannot read {}: {e}", policy.display()))?;
    // The name shows up in diagnostics and in each rule's source: keep
    // build-machine paths out of shipped artifacts.
    let name = policy
        .file_name()
        .map_or("policy.toml".into(), |n| n.to_string_lossy().into_owned());
    let inputs = Inputs::from_text(&name, &text);
    // Portable: `${WORKSPACE}`, `${HOME}`, `${TMPDIR}` placeholders, filled
    // by the loader at run time. Nothing on the build machine is read.
    let opts = Options {
        portable: true,
        ..Options::default()
    };
    let mut artifacts = Vec::new();
    let mut report = String::new();
    for target in Target::ALL {
        match compile::compile(&inputs, &[target], &opts) {
            Ok(mut out) => artifacts.push((target, out.artifacts.swap_remove(0).text)),
            Err(f) => {
                let text = sbx::diag::render_human(&f.diagnostics, &inputs.files(), false);
                report.push_str(&format!("target {}:\n{text}", target.name()));
            }
        }
    }
    if !report.is_empty() {
        return Err(report);
    }
    for (target, text) in artifacts {
        let path = out_dir.join(target.file_name());
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
