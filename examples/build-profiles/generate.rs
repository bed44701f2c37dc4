// The whole build-time job, shared (through `include!`) by this crate's
// build.rs, the `build_profiles` cargo example of sbx, and
// tests/example_build.rs, so that the code they run is the same.

/// Compile `policy` for every target in portable mode and write each
/// artifact into `out_dir` under its usual file name (`profile.sb`,
/// `linux.json`, ...). An invalid policy is an error (the human report);
/// a target this build of sbx cannot produce gets an empty file and is
/// returned with the reason, so the caller can warn.
pub fn generate(
    policy: &std::path::Path,
    out_dir: &std::path::Path,
) -> Result<Vec<(sbx::Target, String)>, String> {
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
    if let Err(f) = compile::load(&inputs, &opts) {
        return Err(sbx::diag::render_human(&f.diagnostics, &inputs.files(), false));
    }
    let mut skipped = Vec::new();
    for target in Target::ALL {
        let path = out_dir.join(target.file_name());
        let text = match compile::compile(&inputs, &[target], &opts) {
            Ok(out) => out.artifacts[0].text.clone(),
            Err(f) => {
                let why: Vec<String> = f.diagnostics.iter().map(|d| d.message.clone()).collect();
                skipped.push((target, why.join("; ")));
                String::new()
            }
        };
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(skipped)
}
