//! In-process benchmarks: compile time against rule count for each target,
//! and the front end's schema validation and lowering on their own.
//! `cargo bench`; whole-process figures (start-up, RSS, `sbx run`) come
//! from bench/run.sh. Inputs come from bench/gen_policy.py (python3).

use sbx::compile::{self, Inputs, Options, Target};
use sbx::ir::Os;
use sbx::policy::{self, source::Parsed, source::SourceFile};

fn main() {
    divan::main();
}

/// The policy `bench/gen_policy.py N` writes (the `missing` shape).
fn policy_text(n: usize) -> String {
    let out = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/gen_policy.py"))
        .arg(n.to_string())
        .output()
        .expect("python3 runs bench/gen_policy.py");
    assert!(out.status.success(), "gen_policy.py {n} failed");
    String::from_utf8(out.stdout).expect("UTF-8 policy")
}

/// A policy of `n` rules in `shape` (bench/gen_policy.py), with its
/// workspace, home and approvals; `PATH` gets the shape's `bin/`.
fn shaped(shape: &str, n: usize) -> (Inputs, Options) {
    let dir = workspace().join(format!("{shape}{n}"));
    let out = std::process::Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/gen_policy.py"))
        .args([shape, &n.to_string(), dir.as_str()])
        .output()
        .expect("python3 runs bench/gen_policy.py");
    assert!(out.status.success(), "gen_policy.py {shape} {n} failed");
    let line = String::from_utf8(out.stdout).expect("UTF-8 arguments");
    let mut opts = Options::default();
    let mut files = Vec::new();
    let mut args = line.split_whitespace();
    while let Some(a) = args.next() {
        let mut value = || camino::Utf8PathBuf::from(args.next().expect("a value"));
        match a {
            "--workspace" => opts.workspace = Some(value()),
            "--home" => opts.home = Some(value()),
            "--approvals" => {
                #[derive(serde::Deserialize)]
                struct Store {
                    mounts: Vec<sbx::lower::Approval>,
                }
                let text = std::fs::read_to_string(value()).expect("approvals");
                let store: Store = serde_json::from_str(&text).expect("approvals JSON");
                opts.approvals = store.mounts;
            }
            f => files.push(camino::Utf8PathBuf::from(f)),
        }
    }
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{dir}/bin:{path}"));
    let inputs = Inputs::read(&files).unwrap_or_else(|_| panic!("{shape}: policy files"));
    (inputs, opts)
}

const SHAPES: &[&str] = &[
    "missing",
    "siblings",
    "nested",
    "carveouts",
    "globs",
    "external",
    "env",
    "commands",
    "net",
    "layered",
];

/// `--target all` on 10,000 rules of each shape bench/gen_policy.py makes.
#[divan::bench(args = SHAPES, sample_count = 5)]
fn shape_all(bencher: divan::Bencher, shape: &str) {
    let targets: Vec<Target> = Target::ALL.into_iter().filter(|&t| built(t)).collect();
    let (inputs, opts) = shaped(shape, 10_000);
    bencher.bench(|| compile::compile(&inputs, &targets, &opts).expect("compiles"));
}

/// A workspace directory that outlives the benchmarks.
fn workspace() -> camino::Utf8PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let d = DIR.get_or_init(|| tempfile::tempdir().expect("tempdir"));
    camino::Utf8PathBuf::from_path_buf(d.path().to_path_buf()).expect("UTF-8 temp dir")
}

fn options() -> Options {
    Options {
        workspace: Some(workspace()),
        home: Some("/home/bench".into()),
        ..Options::default()
    }
}

const COUNTS: &[usize] = &[10, 100, 1_000, 10_000];

/// Targets this build can emit (the macOS back end may not be merged yet).
fn built(t: Target) -> bool {
    let inputs = Inputs::from_text("p.toml", &policy_text(1));
    compile::compile(&inputs, &[t], &options()).is_ok()
}

fn bench_compile(bencher: divan::Bencher, n: usize, t: Target) {
    let inputs = Inputs::from_text("p.toml", &policy_text(n));
    let opts = options();
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| compile::compile(&inputs, &[t], &opts).expect("compiles"));
}

#[divan::bench(args = COUNTS, sample_count = 10)]
fn compile_ir(bencher: divan::Bencher, n: usize) {
    bench_compile(bencher, n, Target::Ir);
}

#[divan::bench(args = COUNTS, sample_count = 10)]
fn compile_linux(bencher: divan::Bencher, n: usize) {
    bench_compile(bencher, n, Target::Linux);
}

#[divan::bench(args = COUNTS, sample_count = 10)]
fn compile_landlockconfig(bencher: divan::Bencher, n: usize) {
    bench_compile(bencher, n, Target::Landlockconfig);
}

#[divan::bench(args = COUNTS, sample_count = 10)]
fn compile_windows(bencher: divan::Bencher, n: usize) {
    bench_compile(bencher, n, Target::Windows);
}

/// Every target this build has, as `--target all` does (SBPL included
/// once its back end is built in).
#[divan::bench(args = COUNTS, sample_count = 10)]
fn compile_all(bencher: divan::Bencher, n: usize) {
    let targets: Vec<Target> = Target::ALL.into_iter().filter(|&t| built(t)).collect();
    let inputs = Inputs::from_text("p.toml", &policy_text(n));
    let opts = options();
    bencher
        .counter(divan::counter::ItemsCount::new(n))
        .bench(|| compile::compile(&inputs, &targets, &opts).expect("compiles"));
}

fn parsed(n: usize) -> Parsed {
    Parsed::parse(SourceFile {
        name: "p.toml".into(),
        text: policy_text(n).into(),
    })
    .expect("parses")
}

/// TOML to the JSON view with spans.
#[divan::bench(args = COUNTS, sample_count = 10)]
fn parse(bencher: divan::Bencher, n: usize) {
    let text = policy_text(n);
    bencher.bench(|| {
        Parsed::parse(SourceFile {
            name: "p.toml".into(),
            text: text.as_str().into(),
        })
        .expect("parses")
    });
}

/// The happy path: typed deserialisation that stands in for the schema.
#[divan::bench(args = COUNTS, sample_count = 10)]
fn schema_typed(bencher: divan::Bencher, n: usize) {
    let p = parsed(n);
    bencher.bench(|| policy::typed::typed(&p).expect("valid"));
}

/// The JSON Schema validator itself (what an invalid file goes through).
#[divan::bench(args = COUNTS, sample_count = 10)]
fn schema_validator(bencher: divan::Bencher, n: usize) {
    let p = parsed(n);
    bencher.bench(|| policy::schema::validate(&p));
}

/// Lowering alone: paths anchored, normalised and canonicalised.
#[divan::bench(args = COUNTS, sample_count = 10)]
fn lower_linux(bencher: divan::Bencher, n: usize) {
    let inputs = Inputs::from_text("p.toml", &policy_text(n));
    let opts = options();
    let (policy, _) = compile::load(&inputs, &opts).expect("loads");
    bencher.bench(|| compile::lower_for(&policy, &opts, Os::Linux).expect("lowers"));
}
