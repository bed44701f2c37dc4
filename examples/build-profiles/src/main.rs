//! Prints the profiles that build.rs generated into OUT_DIR.

const PROFILES: &[(&str, &str)] = &[
    ("macos", include_str!(concat!(env!("OUT_DIR"), "/profile.sb"))),
    ("linux", include_str!(concat!(env!("OUT_DIR"), "/linux.json"))),
    (
        "landlockconfig",
        include_str!(concat!(env!("OUT_DIR"), "/landlockconfig.json")),
    ),
    ("windows", include_str!(concat!(env!("OUT_DIR"), "/windows.json"))),
    ("ir", include_str!(concat!(env!("OUT_DIR"), "/ir.json"))),
];

fn main() {
    for (target, text) in PROFILES {
        println!("== {target}");
        print!("{text}");
    }
}
