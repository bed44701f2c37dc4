//! The policy format (POLICY.md) as serde + schemars types. One `Layer` is
//! one file; layers merge into a [`super::Policy`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// serde's derive also reads a struct from a sequence (`limits = [60, 120]`
/// would fill the fields in order); the schema allows tables only. These
/// types derive with `remote = "Self"` (an inherent `deserialize`) and are
/// deserialised through `deserialize_map`, which refuses anything else.
macro_rules! tables_only {
    ($($t:ident $(<$g:ident>)?),* $(,)?) => {$(
        impl<'de $(, $g: serde::de::DeserializeOwned)?> Deserialize<'de> for $t $(<$g>)? {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Table $(<$g>)? (std::marker::PhantomData<$t $(<$g>)?>);
                impl<'de $(, $g: serde::de::DeserializeOwned)?> serde::de::Visitor<'de>
                    for Table $(<$g>)?
                {
                    type Value = $t $(<$g>)?;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a table")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $t::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                d.deserialize_map(Table(std::marker::PhantomData))
            }
        }
        impl $(<$g: Serialize>)? Serialize for $t $(<$g>)? {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $t::serialize(self, s)
            }
        }
    )*};
}

tables_only!(
    Layer,
    MergeTable<T>,
    FsRule,
    NetRule,
    EnvRule,
    CommandRule,
    Process,
    Limits,
    Macos,
    Linux,
    Windows,
);

/// The schema's value constraints (`length`, `range`), enforced again when
/// deserialising, so that the types alone never accept what the schema
/// refuses (tests/schema.rs checks the two agree).
mod check {
    use serde::de::{Deserialize, Deserializer, Error};
    use std::fmt::Display;

    fn empty<E: Error>() -> E {
        E::custom("must not be empty")
    }

    pub fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(empty());
        }
        Ok(s)
    }

    pub fn opt_non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let s = Option::<String>::deserialize(d)?;
        if s.as_deref() == Some("") {
            return Err(empty());
        }
        Ok(s)
    }

    pub fn items_non_empty<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Vec<String>>, D::Error> {
        let v = Option::<Vec<String>>::deserialize(d)?;
        if v.iter().flatten().any(String::is_empty) {
            return Err(empty());
        }
        Ok(v)
    }

    fn in_range<'de, D, T>(d: D, min: T, max: T) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de> + PartialOrd + Display + Copy,
    {
        let v = Option::<T>::deserialize(d)?;
        match v {
            Some(x) if x < min || x > max => {
                Err(D::Error::custom(format!("{x} is not in {min}..={max}")))
            }
            _ => Ok(v),
        }
    }

    pub fn port<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
        in_range(d, 1, u16::MAX)
    }

    pub fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        in_range(d, 1, u64::MAX)
    }

    pub fn abi<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        in_range(d, 1, 7)
    }

    pub fn version<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        in_range(d, 1, 1)
    }
}

/// `version`: the integer 1, and nothing else (`const`), so an editor
/// using the schema refuses what `check` refuses.
fn version_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "description": "Format version; only 1 exists.",
        "type": "integer",
        "const": 1
    })
}

/// One policy file (a layer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
#[schemars(
    title = "sbx policy",
    description = "An sbx sandbox policy, format version 1."
)]
pub struct Layer {
    /// Format version; only 1 exists.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "check::version"
    )]
    #[schemars(schema_with = "version_schema")]
    pub version: Option<i64>,
    /// `required`: fail if any rule cannot be enforced exactly by a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Enforcement>,
    /// Filesystem grants; absent means the workspace, read + write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<Mergeable<FsRule>>,
    /// Network grants; absent means no network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net: Option<Mergeable<NetRule>>,
    /// Environment variables forwarded beyond the minimal set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Mergeable<EnvRule>>,
    /// Subprocess allow-list; absent means any program may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<BTreeMap<String, CommandRule>>,
    /// Globs added to the built-in sensitive-path list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensitive_paths: Option<Mergeable<String>>,
    /// Paths added to the built-in protected-path list (POLICY.md §7a):
    /// relative entries apply at the top of every writable tree, `~/` and
    /// absolute ones where they lie inside one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_paths: Option<Mergeable<String>>,
    /// `sbx run` forwards the caller's ssh agent (`SSH_AUTH_SOCK`) to a
    /// fixed path inside and shows `~/.ssh/known_hosts` read-only, never
    /// the keys; default false. For `[[net]]` rules with `scheme = "ssh"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_agent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<Process>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub macos: Option<Macos>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux: Option<Linux>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<Windows>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    BestEffort,
    Required,
}

/// A list, or a merge table saying how it combines with earlier layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, bound(deserialize = "T: serde::de::DeserializeOwned"))]
pub enum Mergeable<T> {
    List(Vec<T>),
    Merge(MergeTable<T>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct MergeTable<T> {
    #[serde(default)]
    pub strategy: Strategy,
    pub value: Vec<T>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    #[default]
    Append,
    Prepend,
    Replace,
    Dedup,
}

/// `[[fs]]`: a filesystem grant. Most specific path wins.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct FsRule {
    /// `.`-relative (workspace), `~`-relative (home) or absolute.
    #[schemars(length(min = 1))]
    #[serde(deserialize_with = "check::non_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    /// Alias for create + update + delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub create: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execute: Option<bool>,
    /// RFD D43: reaches outside the workspace through an approved symlink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<bool>,
}

/// `[[net]]`: a network grant (kernel-enforced by TCP port only).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct NetRule {
    /// Hostname, `*.domain`, IP, `localhost` or `*` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    #[serde(deserialize_with = "check::opt_non_empty")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<Scheme>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    #[serde(deserialize_with = "check::port")]
    pub port: Option<u16>,
    /// URL path prefix; cooperative only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// Listen on the port instead of connecting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<bool>,
    /// `false` makes a deny rule; deny rules are checked first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    Http,
    Https,
    Ws,
    Wss,
    Ssh,
    Tcp,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
            Scheme::Ws => "ws",
            Scheme::Wss => "wss",
            Scheme::Ssh => "ssh",
            Scheme::Tcp => "tcp",
        }
    }
    /// The port a scheme implies when `port` is absent.
    pub fn default_port(self) -> Option<u16> {
        match self {
            Scheme::Http | Scheme::Ws => Some(80),
            Scheme::Https | Scheme::Wss => Some(443),
            Scheme::Ssh => Some(22),
            Scheme::Tcp => None,
        }
    }
}

/// `[[env]]`: forward a variable (exact name or glob) to the child.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct EnvRule {
    #[schemars(length(min = 1))]
    #[serde(deserialize_with = "check::non_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
}

/// `[commands.NAME]`: a program the sandbox may execute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct CommandRule {
    /// Allowed argument prefixes; `**` last allows any rest. Cooperative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<Vec<String>>>,
    /// Which of the policy's allowed env vars this command receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Process {
    /// Named per-OS root sets; `[]` disables all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presets: Option<Vec<Preset>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(length(min = 1)))]
    #[serde(deserialize_with = "check::items_non_empty")]
    pub read_roots: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(inner(length(min = 1)))]
    #[serde(deserialize_with = "check::items_non_empty")]
    pub write_roots: Option<Vec<String>>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    SystemRuntime,
    DeveloperToolchains,
    UserTemp,
    PackageManagerConfig,
}

impl Preset {
    pub const DEFAULT: [Preset; 3] = [
        Preset::SystemRuntime,
        Preset::DeveloperToolchains,
        Preset::UserTemp,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Preset::SystemRuntime => "system_runtime",
            Preset::DeveloperToolchains => "developer_toolchains",
            Preset::UserTemp => "user_temp",
            Preset::PackageManagerConfig => "package_manager_config",
        }
    }
}

/// Environment variables always forwarded, on every OS (RFD 075).
pub const MINIMAL_ENV: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_*"];
/// What Windows needs to start a process at all, forwarded there too.
pub const MINIMAL_ENV_WINDOWS: &[&str] =
    &["SystemRoot", "windir", "TEMP", "TMP", "COMSPEC", "PATHEXT"];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Limits {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    #[serde(deserialize_with = "check::positive")]
    pub max_processes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    #[serde(deserialize_with = "check::positive")]
    pub max_memory_mib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    #[serde(deserialize_with = "check::positive")]
    pub cpu_time_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    #[serde(deserialize_with = "check::positive")]
    pub wall_time_s: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Macos {
    /// Extra global Mach service names the profile may look up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mach_lookup: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_pty: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Linux {
    /// Landlock scopes (ABI >= 6); default both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<Scope>>,
    /// Refuse to run on a kernel whose Landlock ABI is lower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 7))]
    #[serde(deserialize_with = "check::abi")]
    pub min_abi: Option<u32>,
    /// User, mount, PID and network namespaces beneath Landlock in `sbx
    /// run`: `auto` (default) where the policy needs them (carve-outs,
    /// process lifetime, no network), `always`, or `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<Namespaces>,
    /// Capabilities the command keeps when sbx runs as root (`CAP_CHOWN`,
    /// …); default none. Those POLICY.md §13 lists are never kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    /// Let the command create user namespaces (`unshare -U`, Chromium's
    /// sandbox, rootless containers); default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested_user_namespaces: Option<bool>,
    /// Let the command run a program from a memfd; default false
    /// (docs/linux.md gives the measurement behind it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memfd_exec: Option<bool>,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Namespaces {
    Auto,
    Always,
    Never,
}

impl Namespaces {
    pub fn as_str(self) -> &'static str {
        match self {
            Namespaces::Auto => "auto",
            Namespaces::Always => "always",
            Namespaces::Never => "never",
        }
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    AbstractUnixSocket,
    Signal,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Windows {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Token>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appcontainer: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ui_restrictions: Option<Vec<UiRestriction>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_on_close: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Token {
    Restricted,
    LowIntegrity,
    None,
}

impl Token {
    pub fn as_str(self) -> &'static str {
        match self {
            Token::Restricted => "restricted",
            Token::LowIntegrity => "low_integrity",
            Token::None => "none",
        }
    }
}

/// Job-object UI restrictions (JOB_OBJECT_UILIMIT_*).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum UiRestriction {
    Desktop,
    DisplaySettings,
    ExitWindows,
    GlobalAtoms,
    Handles,
    ReadClipboard,
    SystemParameters,
    WriteClipboard,
}

impl UiRestriction {
    pub fn as_str(self) -> &'static str {
        match self {
            UiRestriction::Desktop => "desktop",
            UiRestriction::DisplaySettings => "display_settings",
            UiRestriction::ExitWindows => "exit_windows",
            UiRestriction::GlobalAtoms => "global_atoms",
            UiRestriction::Handles => "handles",
            UiRestriction::ReadClipboard => "read_clipboard",
            UiRestriction::SystemParameters => "system_parameters",
            UiRestriction::WriteClipboard => "write_clipboard",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{from_value, json};

    #[test]
    fn structs_are_tables_only() {
        assert!(from_value::<Limits>(json!([60, 120])).is_err());
        assert!(from_value::<FsRule>(json!([".", true])).is_err());
        assert!(from_value::<Mergeable<FsRule>>(json!(["append", []])).is_err());
        assert!(from_value::<Layer>(json!([])).is_err());
        let l: Limits = from_value(json!({"cpu_time_s": 5})).unwrap();
        assert_eq!(l.cpu_time_s, Some(5));
    }

    #[test]
    fn value_constraints_match_the_schema() {
        assert!(from_value::<NetRule>(json!({"port": 0})).is_err());
        assert!(from_value::<NetRule>(json!({"port": 65535})).is_ok());
        assert!(from_value::<NetRule>(json!({"host": ""})).is_err());
        assert!(from_value::<FsRule>(json!({"path": "", "read": true})).is_err());
        assert!(from_value::<EnvRule>(json!({"name": ""})).is_err());
        assert!(from_value::<Limits>(json!({"max_processes": 0})).is_err());
        assert!(from_value::<Linux>(json!({"min_abi": 8})).is_err());
        assert!(from_value::<Process>(json!({"read_roots": ["/a", ""]})).is_err());
    }

    #[test]
    fn serialising_round_trips() {
        let v = json!({
            "version": 1,
            "fs": {"strategy": "replace", "value": [{"path": ".", "read": true}]},
            "net": [{"host": "example.com", "port": 443}],
            "commands": {"git": {"args": [["status"]]}},
            "limits": {"wall_time_s": 9}
        });
        let l: Layer = from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&l).unwrap(), v);
    }
}
