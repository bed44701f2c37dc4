//! In-process benchmarks: compile time against rule count for each target,
//! and the front end's schema validation and lowering on their own.
//! `cargo bench`; whole-process figures (start-up, RSS, `sbx run`) come
//! from bench/run.sh. Inputs mirror bench/gen_policy.py.

use sbx::compile::{self, Inputs, Options, Target};
use sbx::ir::Os;
use sbx::policy::{self, source::Parsed, source::SourceFile};

fn main() {
    divan::main();
}

const RIGHTS: [&str; 4] = [
    "read = true",
    "read = true\nwrite = true",
    "read = true\nexecute = true",
    "create = true\nupdate = true",
];

/// The policy bench/gen_policy.py writes for `n` rules.
fn policy_text(n: usize) -> String {
    let mut out = String::from("version = 1\n\n");
    for i in 0..n {
        out.push_str(&format!(
            "[[fs]]\npath = \"d{}/s{}/f{i}\"\n{}\n\n",
            i % 97,
            i % 13,
            RIGHTS[i % RIGHTS.len()]
        ));
    }
    out.push_str("[[net]]\nhost = \"api.example.com\"\nscheme = \"https\"\n\n");
    out.push_str("[[env]]\nname = \"AWS_*\"\n");
    out
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
        text: policy_text(n),
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
            text: text.clone(),
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
