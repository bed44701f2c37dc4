//! One function per escape attempt. Each returns `Err(explanation)`.

use crate::fixture::{check, expect, Fx, Out};
use crate::guard_cases as guard;
use crate::listen_cases as listen;
use crate::ns_cases as ns;
use crate::pin_cases as pin;
use crate::privilege_cases as privilege;
use crate::protect_cases as protect;
use std::ffi::OsString;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::time::Duration;

type Case = fn(&Fx) -> Result<(), String>;

/// Appended to a policy: Landlock, seccomp and the subreaper alone, for
/// the cases that test them without the namespace layer.
const NEVER: &str = "\n[linux]\nnamespaces = \"never\"\n";

pub const ALL: &[(&str, Case)] = &[
    ("read_write_outside", read_write_outside),
    ("symlink_in_workspace_to_outside", symlink_to_outside),
    ("hard_link_and_rename_out", hard_link_and_rename_out),
    ("truncate_read_only_file", truncate_read_only),
    ("proc_parent_environ", proc_parent_environ),
    ("no_capabilities_in_any_set", privilege::no_capabilities),
    (
        "nested_user_namespaces_refused",
        privilege::nested_user_namespaces,
    ),
    ("tcp_connect_denied_vs_allowed_port", tcp_ports),
    ("udp_raw_packet_mptcp_sockets", udp_and_other_sockets),
    ("udp_allowed_with_unrestricted_network", udp_unrestricted),
    ("abstract_unix_socket_outside", abstract_unix_socket),
    ("kill_process_outside", kill_outside),
    ("exec_unlisted_binary", exec_allow_list),
    ("exec_allow_list_script_program", exec_allow_list_script),
    ("env_has_no_parent_secret", env_filtered),
    ("dev_null_writable", dev_null),
    ("exit_code_propagation", exit_codes),
    ("inherited_descriptor_closed", inherited_fd),
    ("ptrace_tiocsti_io_uring", ptrace_ioctl_io_uring),
    ("x32_and_i386_syscalls", other_abis),
    ("wall_time_kills_the_tree", wall_time),
    ("terminal_ctrl_c_and_ctrl_z", terminal),
    ("forced_lower_abis_degrade", forced_abis),
    ("no_landlock_best_effort_vs_required", no_landlock),
    ("required_refuses_inexact_policy", required_inexact),
    ("portable_artifact_expands_placeholders", portable_artifact),
    ("tcp_fast_open_past_connect", tcp_fast_open),
    ("limits_and_priority_of_host_process", host_process_limits),
    ("set_user_id_and_file_capabilities", set_user_id),
    ("protected_paths_cannot_be_planted", protected_paths),
    (
        "covered_sensitive_path_hidden_named_readable",
        covered_sensitive,
    ),
    ("nothing_outlives_the_run", nothing_outlives),
    (
        "a_sibling_of_the_command_does_not_hold_the_run",
        sibling_does_not_hold,
    ),
    ("artifact_without_baseline_refused", artifact_baseline),
    ("artifact_rule_through_symlink_out", artifact_symlink_out),
    ("rule_path_swapped_for_symlink", swap_race),
    ("terminal_read_after_the_run", terminal_after_the_run),
    ("own_policy_and_artifact_read_only", own_files_read_only),
    ("protected_path_created_is_moved_aside", planted_moved_aside),
    ("git_include_cannot_be_planted", protect::git_include),
    (
        "caller_grants_not_steered",
        protect::caller_grants_not_steered,
    ),
    (
        "gitdir_planted_above_grants_nothing",
        protect::gitdir_planted_above_grants_nothing,
    ),
    ("exec_chain_not_steered", protect::exec_chain_not_steered),
    (
        "rule_link_planted_is_not_followed",
        protect::rule_link_planted_is_not_followed,
    ),
    (
        "rule_link_chains_are_not_followed",
        protect::rule_link_chains_are_not_followed,
    ),
    (
        "never_with_writable_state_is_refused",
        protect::never_with_writable_state_is_refused,
    ),
    ("git_commondir_cannot_redirect", protect::git_commondir),
    (
        "git_repository_made_in_the_run_is_swept",
        protect::git_nested_repo_made_in_the_run,
    ),
    (
        "git_submodule_dirs_deep_in_modules",
        protect::git_submodule_dirs_deep_in_modules,
    ),
    (
        "git_deep_submodule_entry_is_swept",
        protect::git_deep_submodule_entry_is_swept,
    ),
    (
        "git_submodules_own_index_is_read",
        protect::git_submodules_own_index_is_read,
    ),
    (
        "git_sweep_stays_in_writable_trees",
        protect::git_sweep_stays_in_writable_trees,
    ),
    (
        "git_dir_moved_into_place_is_swept",
        protect::git_dir_moved_into_place_is_swept,
    ),
    (
        "git_dir_with_linked_refs_is_swept",
        protect::git_dir_with_linked_refs_is_swept,
    ),
    (
        "git_repo_moved_to_an_old_entry_is_swept",
        protect::git_repo_moved_to_an_old_entry_is_swept,
    ),
    (
        "git_repo_in_unlistable_dir_is_swept",
        protect::git_repo_in_unlistable_dir_is_swept,
    ),
    (
        "pin_hooks_path_and_include",
        pin::git_hooks_path_and_include,
    ),
    ("pin_linked_worktree", pin::git_linked_worktree),
    ("pin_deny_rule_parent", pin::deny_rule_parent),
    ("pin_own_policy_parent", pin::own_policy_parent),
    (
        "git_config_kept_only_when_inert",
        protect::git_config_kept_only_when_inert,
    ),
    (
        "git_swapped_by_renames_is_caught",
        protect::git_swapped_by_renames,
    ),
    (
        "after_run_work_stays_inside_the_tree",
        protect::sweep_stays_inside,
    ),
    ("quarantine_cannot_be_exhausted", protect::quarantine_decoys),
    ("user_site_pth_swept", protect::user_site_pth_swept),
    (
        "protected_link_replaced_moves_aside",
        protect::protected_link_replaced,
    ),
    ("sweep_budget_is_said", protect::sweep_budget_said),
    (
        "stopped_terminal_cannot_stall_the_move",
        protect::stopped_terminal,
    ),
    ("killed_sbx_guardian_finishes", guard::sbx_killed),
    ("killed_in_setup_command_ends", guard::killed_in_setup),
    ("killed_group_guardian_finishes", guard::group_killed),
    (
        "killed_sbx_without_journal_guardian_finishes",
        guard::killed_without_journal,
    ),
    ("panicked_sbx_guardian_finishes", guard::panicked),
    (
        "killed_guardian_sbx_sweep_finishes",
        guard::both_killed_sweep,
    ),
    (
        "killed_guardian_next_run_finishes",
        guard::both_killed_next_run,
    ),
    ("concurrent_runs_sweep_once", guard::concurrent_runs),
    (
        "state_reader_cannot_stop_launch_records",
        guard::state_reader_cannot_stop_launch_records,
    ),
    (
        "state_directory_is_hidden",
        guard::state_directory_is_hidden,
    ),
    ("leases_are_refused", guard::leases_are_refused),
    (
        "never_still_checks_after_the_run",
        guard::never_checks_after_the_run,
    ),
    ("ns_carve_out_read_only", ns::carve_out_read_only),
    ("ns_carve_out_rewidened_beneath", ns::carve_out_nested),
    ("ns_deny_rule_hides", ns::deny_rule_hides),
    ("ns_required_carve_out_runs", ns::required_carve_out_runs),
    (
        "ns_proc_shows_the_sandbox_only",
        ns::proc_shows_the_sandbox_only,
    ),
    ("ns_daemon_dies_with_the_run", ns::daemon_dies_with_the_run),
    ("ns_listen_without_bind", ns::listen_without_bind),
    (
        "listen_without_bind_real_network",
        listen::listen_on_the_real_network,
    ),
    (
        "listen_fails_closed_without_sbx",
        listen::listen_fails_closed_without_sbx,
    ),
    (
        "listen_unchecked_under_another_listener",
        listen::listen_unchecked_under_another_listener,
    ),
    ("ns_unavailable_fallback", ns::namespaces_unavailable),
    ("ns_first_mount_refused_fallback", ns::first_mount_refused),
    ("ns_read_only_grant_metadata", ns::read_only_grant_metadata),
    ("ns_metadata_outside_temp", ns::metadata_outside_temp),
    ("ns_mounts_nosuid_nodev", ns::mounts_nosuid_nodev),
    (
        "ns_never_says_what_it_gives_up",
        ns::never_says_what_it_gives_up,
    ),
    (
        "ns_private_temp_hides_host_sockets",
        ns::private_temp_hides_host_sockets,
    ),
    (
        "ns_private_temp_is_the_runs_own",
        ns::private_temp_is_the_runs_own,
    ),
    (
        "ns_private_temp_parked_holds_nothing_of_the_last_run",
        ns::private_temp_parked_holds_nothing_of_the_last_run,
    ),
    ("ns_known_sockets_hidden", ns::known_sockets_hidden),
    (
        "ns_proxy_hook_gets_listeners",
        ns::proxy_hook_gets_listeners,
    ),
    ("exec_from_memfd", privilege::memfd_exec),
    (
        "ns_pathname_socket_outside_grants",
        ns::pathname_socket_outside,
    ),
    ("ns_outside_is_invisible", ns::outside_is_invisible),
    ("ns_ptys_are_the_runs_own", ns::ptys_are_the_runs_own),
];

fn read_write_outside(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    expect(
        "read outside",
        &fx.run(&p, &[], &["read", &fx.path("outside/secret")]),
        "EACCES",
    )?;
    expect(
        "write outside",
        &fx.run(&p, &[], &["write", &fx.path("outside/new")]),
        "EACCES",
    )?;
    expect(
        "read workspace",
        &fx.run(&p, &[], &["read", &fx.path("ws/data")]),
        "OK",
    )?;
    expect(
        "write workspace",
        &fx.run(&p, &[], &["write", &fx.path("ws/new")]),
        "OK",
    )
}

fn symlink_to_outside(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    expect(
        "read ws/link_out",
        &fx.run(&p, &[], &["read", &fx.path("ws/link_out")]),
        "EACCES",
    )?;
    expect(
        "read ws/link_in",
        &fx.run(&p, &[], &["read", &fx.path("ws/link_in")]),
        "OK",
    )?;
    // A link made inside the sandbox is no better.
    let fresh = fx.path("ws/fresh");
    expect(
        "make link",
        &fx.run(&p, &[], &["symlink", &fx.path("outside/secret"), &fresh]),
        "OK",
    )?;
    expect(
        "read fresh link",
        &fx.run(&p, &[], &["read", &fresh]),
        "EACCES",
    )
}

fn hard_link_and_rename_out(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    let r = |args: &[&str]| fx.run(&p, &[], args);
    expect(
        "link out",
        &r(&["link", &fx.path("ws/data"), &fx.path("outside/x")]),
        "EACCES",
    )?;
    expect(
        "rename out",
        &r(&["rename", &fx.path("ws/a"), &fx.path("outside/a")]),
        "EACCES",
    )?;
    // Pulling an outside file in would make it writable through the
    // workspace: refused as a cross-hierarchy move.
    expect(
        "link in",
        &r(&["link", &fx.path("outside/secret"), &fx.path("ws/stolen")]),
        "EXDEV",
    )?;
    // A rename also removes the source: not granted outside.
    expect(
        "rename in",
        &r(&["rename", &fx.path("outside/secret"), &fx.path("ws/stolen")]),
        "EACCES",
    )?;
    // The file would gain `execute` under execdir/: EXDEV, so that
    // tools fall back to copying.
    expect(
        "rename to more rights",
        &r(&["rename", &fx.path("ws/c"), &fx.path("execdir/c")]),
        "EXDEV",
    )?;
    expect(
        "link within",
        &r(&["link", &fx.path("ws/data"), &fx.path("ws/sub/data2")]),
        "OK",
    )?;
    expect(
        "rename within",
        &r(&["rename", &fx.path("ws/b"), &fx.path("ws/sub/b")]),
        "OK",
    )?;
    check(fx.root.join("outside/secret").exists(), || {
        "outside/secret moved".into()
    })
}

fn truncate_read_only(fx: &Fx) -> Result<(), String> {
    // The policy has no network, so the namespace layer is used and the
    // read-only grant is a read-only mount: EROFS before Landlock's
    // EACCES. Without the layer Landlock alone refuses.
    let p = fx.policy("best_effort", "");
    expect(
        "truncate ro",
        &fx.run(&p, &[], &["truncate", &fx.path("ro/file")]),
        "EROFS",
    )?;
    expect(
        "O_TRUNC ro",
        &fx.run(&p, &[], &["open-trunc", &fx.path("ro/file")]),
        "EROFS",
    )?;
    let never = fx.policy("best_effort", "\n[linux]\nnamespaces = \"never\"\n");
    expect(
        "truncate ro, Landlock alone",
        &fx.run(&never, &[], &["truncate", &fx.path("ro/file")]),
        "EACCES",
    )?;
    expect(
        "read ro",
        &fx.run(&p, &[], &["read", &fx.path("ro/file")]),
        "OK",
    )?;
    expect(
        "truncate ws",
        &fx.run(&p, &[], &["truncate", &fx.path("ws/data")]),
        "OK",
    )?;
    check(
        std::fs::read_to_string(fx.root.join("ro/file")).unwrap() == "ro-data",
        || "ro/file changed".into(),
    )
}

fn proc_parent_environ(fx: &Fx) -> Result<(), String> {
    // The preset grants /proc read-only; Landlock's ptrace rule keeps
    // other domains' environ out, provided a root child has lost
    // CAP_SYS_ADMIN and CAP_PERFMON (which `mm_access` trusts first).
    let p = fx.policy("best_effort", NEVER);
    expect(
        "parent environ",
        &fx.run(&p, &[], &["read-proc-parent", "environ"]),
        "EACCES",
    )?;
    expect(
        "parent maps",
        &fx.run(&p, &[], &["read-proc-parent", "maps"]),
        "EACCES",
    )?;
    expect(
        "own environ",
        &fx.run(&p, &[], &["read", "/proc/self/environ"]),
        "OK",
    )?;
    expect(
        "parent stat",
        &fx.run(&p, &[], &["read-proc-parent", "stat"]),
        "OK",
    )
}

fn tcp_ports(fx: &Fx) -> Result<(), String> {
    let ok = TcpListener::bind("127.0.0.1:0").unwrap();
    let denied = TcpListener::bind("127.0.0.1:0").unwrap();
    let okp = ok.local_addr().unwrap().port().to_string();
    let deniedp = denied.local_addr().unwrap().port().to_string();
    let p = fx.policy(
        "best_effort",
        &format!("\n[[net]]\nhost = \"*\"\nport = {okp}\n"),
    );
    expect(
        "connect denied port",
        &fx.run(&p, &[], &["connect-tcp", &deniedp]),
        "EACCES",
    )?;
    expect(
        "connect allowed port",
        &fx.run(&p, &[], &["connect-tcp", &okp]),
        "OK",
    )?;
    // The denied listener is live: without a sandbox the same connect works.
    expect(
        "unsandboxed",
        &fx.unsandboxed(&["connect-tcp", &deniedp]),
        "OK",
    )
}

fn udp_listener() -> (UdpSocket, String) {
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let port = u.local_addr().unwrap().port().to_string();
    (u, port)
}

fn udp_and_other_sockets(fx: &Fx) -> Result<(), String> {
    let (u, port) = udp_listener();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcpp = tcp.local_addr().unwrap().port().to_string();
    let p = fx.policy(
        "best_effort",
        &format!("\n[[net]]\nhost = \"*\"\nport = {tcpp}\n"),
    );
    let sock = |f: i32, t: i32, pr: i32| {
        fx.run(
            &p,
            &[],
            &["socket", &f.to_string(), &t.to_string(), &pr.to_string()],
        )
    };
    expect("udp send", &fx.run(&p, &[], &["udp-send", &port]), "EACCES")?;
    let mut buf = [0u8; 8];
    check(u.recv(&mut buf).is_err(), || {
        "the listener got a datagram".into()
    })?;
    expect(
        "raw icmp",
        &sock(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP),
        "EACCES",
    )?;
    expect(
        "packet",
        &sock(libc::AF_PACKET, libc::SOCK_RAW, 0),
        "EACCES",
    )?;
    expect(
        "mptcp",
        &sock(libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_MPTCP),
        "EACCES",
    )?;
    expect(
        "udp6 cloexec",
        &sock(libc::AF_INET6, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0),
        "EACCES",
    )?;
    expect(
        "vsock",
        &sock(libc::AF_VSOCK, libc::SOCK_STREAM, 0),
        "EACCES",
    )?;
    // Same policy: TCP (with flags), unix datagrams and TCP connects work.
    expect(
        "tcp nonblock",
        &sock(libc::AF_INET6, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0),
        "OK",
    )?;
    expect(
        "unix dgram",
        &sock(libc::AF_UNIX, libc::SOCK_DGRAM, 0),
        "OK",
    )?;
    expect(
        "tcp connect",
        &fx.run(&p, &[], &["connect-tcp", &tcpp]),
        "OK",
    )
}

fn udp_unrestricted(fx: &Fx) -> Result<(), String> {
    let (u, port) = udp_listener();
    let p = fx.policy("best_effort", "\n[[net]]\nhost = \"*\"\n");
    expect("udp send", &fx.run(&p, &[], &["udp-send", &port]), "OK")?;
    let mut buf = [0u8; 8];
    let n = u.recv(&mut buf).map_err(|e| format!("no datagram: {e}"))?;
    check(&buf[..n] == b"ping", || "wrong datagram".into())
}

fn abstract_unix_socket(fx: &Fx) -> Result<(), String> {
    let name = format!("sbx-escape-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _l = UnixListener::bind_addr(&addr).unwrap();
    let p = fx.policy("best_effort", NEVER);
    expect(
        "connect outside",
        &fx.run(&p, &[], &["abstract-connect", &name]),
        "EPERM",
    )?;
    expect(
        "inside",
        &fx.run(&p, &[], &["abstract-self", &format!("{name}-in")]),
        "OK",
    )?;
    expect(
        "unsandboxed",
        &fx.unsandboxed(&["abstract-connect", &name]),
        "OK",
    )
}

fn victim() -> std::process::Child {
    std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("sleep")
}

fn kill_outside(fx: &Fx) -> Result<(), String> {
    let mut v = victim();
    let pid = v.id().to_string();
    let p = fx.policy("best_effort", NEVER);
    let r = expect(
        "kill outside",
        &fx.run(&p, &[], &["kill", &pid, "15"]),
        "EPERM",
    )
    .and_then(|_| {
        expect(
            "kill own child",
            &fx.run(&p, &[], &["kill-own-child"]),
            "OK",
        )
    });
    let alive = v.try_wait().unwrap().is_none();
    let _ = v.kill();
    let _ = v.wait();
    r?;
    check(alive, || "the victim died".into())
}

fn exec_allow_list(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "\n[commands.true]\n");
    expect(
        "exec env",
        &fx.run(&p, &[], &["exec", "/usr/bin/env"]),
        "EACCES",
    )?;
    // /usr is granted read+execute by the preset: only [commands] removes it.
    let out = fx.run(&p, &[], &["exec", "/usr/bin/true"]);
    check(out.code == 0 && out.stdout.is_empty(), || {
        format!("exec true: {out:?}")
    })
}

fn exec_allow_list_script(fx: &Fx) -> Result<(), String> {
    // The sandboxed program is a script: it and its interpreter chain may
    // run, what it calls may not unless listed.
    let script = fx.root.join("ws/job.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ntrue && echo listed-ok\nexec /usr/bin/env\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let p = fx.policy("best_effort", "\n[commands.true]\n");
    let args: Vec<OsString> = vec![
        "run".into(),
        p.into(),
        "--workspace".into(),
        fx.ws.clone().into(),
        "--".into(),
        script.into(),
    ];
    let out = fx.sbx(&args, None);
    check(
        out.stdout.trim() == "listed-ok"
            && out.code == 126
            && out.stderr.contains("Permission denied"),
        || format!("script: {out:?}"),
    )
}

fn env_filtered(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "\n[[env]]\nname = \"AWS_*\"\n");
    let out = fx.run(&p, &[], &["env"]);
    let names: Vec<&str> = out.stdout.lines().collect();
    check(
        out.code == 0 && names == ["AWS_REGION", "HOME", "LANG", "PATH", "USER"],
        || format!("env names: {names:?}\n{}", out.stderr),
    )
}

fn dev_null(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    expect(
        "write /dev/null",
        &fx.run(&p, &[], &["write", "/dev/null"]),
        "OK",
    )?;
    expect(
        "write /dev/kmsg",
        &fx.run(&p, &[], &["write", "/dev/kmsg"]),
        "EACCES",
    )
}

fn code(what: &str, out: &Out, want: i32) -> Result<(), String> {
    check(out.code == want, || {
        format!("{what}: exit {} != {want}: {out:?}", out.code)
    })
}

fn exit_codes(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    code("exit 42", &fx.run(&p, &[], &["exit", "42"]), 42)?;
    code("exit 0", &fx.run(&p, &[], &["exit", "0"]), 0)?;
    code("SIGTERM", &fx.run(&p, &[], &["signal", "15"]), 143)?;
    code("SIGKILL", &fx.run(&p, &[], &["signal", "9"]), 137)?;
    let run = |cmd: &str| {
        let args: Vec<OsString> = vec![
            "run".into(),
            p.clone().into(),
            "--workspace".into(),
            fx.ws.clone().into(),
            "--".into(),
            cmd.into(),
        ];
        fx.sbx(&args, None)
    };
    code("not found", &run("sbx-no-such-command"), 127)?;
    code("missing path", &run(&fx.path("ws/nope")), 127)?;
    // Exists but has no execute bit (even root needs one).
    code("not executable", &run(&fx.path("ws/data")), 126)
}

fn inherited_fd(fx: &Fx) -> Result<(), String> {
    let f = std::fs::File::open(fx.root.join("outside/secret")).unwrap();
    let p = fx.policy("best_effort", "");
    let args = |n: &str| -> Vec<OsString> {
        vec![
            "run".into(),
            p.clone().into(),
            "--workspace".into(),
            fx.ws.clone().into(),
            "--".into(),
            std::env::current_exe().unwrap().into(),
            "--probe".into(),
            "fd".into(),
            n.into(),
        ]
    };
    use std::os::fd::AsRawFd;
    expect("fd 5", &fx.sbx(&args("5"), Some(f.as_raw_fd())), "EBADF")?;
    expect("fd 1", &fx.sbx(&args("1"), Some(f.as_raw_fd())), "OK")
}

fn ptrace_ioctl_io_uring(fx: &Fx) -> Result<(), String> {
    let mut v = victim();
    let pid = v.id().to_string();
    let p = fx.policy("best_effort", "");
    let r = (|| {
        expect(
            "ptrace attach",
            &fx.run(&p, &[], &["ptrace-attach", &pid]),
            "EPERM",
        )?;
        expect(
            "ptrace traceme",
            &fx.run(&p, &[], &["ptrace-traceme"]),
            "OK",
        )?;
        expect("TIOCSTI", &fx.run(&p, &[], &["ioctl-tiocsti"]), "EPERM")?;
        // Other ioctls reach the kernel (stdin is /dev/null, not a tty).
        expect("TCGETS", &fx.run(&p, &[], &["ioctl-tcgets"]), "ENOTTY")?;
        expect("io_uring", &fx.run(&p, &[], &["io-uring"]), "EPERM")?;
        expect("io_uring unsandboxed", &fx.unsandboxed(&["io-uring"]), "OK")
    })();
    let _ = v.kill();
    let _ = v.wait();
    r
}

/// The filter is for the native ABI: x32 syscall numbers get EPERM (the
/// x32 `socket` has a number of its own), 32-bit syscalls kill the
/// process (SIGSYS).
fn other_abis(fx: &Fx) -> Result<(), String> {
    if !cfg!(target_arch = "x86_64") {
        return Ok(());
    }
    let p = fx.policy("best_effort", "");
    expect("x32 getpid", &fx.run(&p, &[], &["x32-getpid"]), "EPERM")?;
    code(
        "i386 getpid",
        &fx.run(&p, &[], &["i386-getpid"]),
        128 + libc::SIGSYS,
    )?;
    // Positive control: the probe itself works outside the sandbox (on
    // kernels with 32-bit emulation; x32 is usually not built in).
    let plain = fx.unsandboxed(&["i386-getpid"]);
    check(
        plain.answer() == "OK" || plain.code == 128 + libc::SIGSEGV,
        || format!("unsandboxed i386 getpid: {plain:?}"),
    )?;
    let plain = fx.unsandboxed(&["x32-getpid"]);
    check(matches!(plain.answer(), "OK" | "ENOSYS"), || {
        format!("unsandboxed x32 getpid: {plain:?}")
    })
}

fn wall_time(fx: &Fx) -> Result<(), String> {
    let p = fx.policy(
        "best_effort",
        &format!("\n[limits]\nwall_time_s = 1\n{NEVER}"),
    );
    let out = fx.run(&p, &[], &["spawn-sleeper", "30"]);
    code("killed", &out, 137)?;
    check(out.elapsed < Duration::from_secs(10), || {
        format!("took {:?}", out.elapsed)
    })?;
    check(out.stderr.contains("wall_time_s = 1 reached"), || {
        out.stderr.clone()
    })?;
    let pid: i32 = out.stdout.trim().parse().map_err(|_| format!("{out:?}"))?;
    // The grandchild left the process group; it must be gone too (a
    // zombie awaiting its reaper is dead).
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let dead = state.is_empty()
        || state
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z');
    check(dead, || format!("grandchild {pid} still running: {state}"))
}

fn forced_abis(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    // ABI 2 has no TRUNCATE right: truncation is not restricted at all.
    let out = fx.run(
        &p,
        &["--landlock-abi", "2", "--report"],
        &["truncate", &fx.path("ro/file")],
    );
    expect("truncate at ABI 2", &out, "OK")?;
    check(
        out.stderr.contains("using ABI 2: partially enforced")
            && out.stderr.contains("wider landlock.truncate"),
        || out.stderr.clone(),
    )?;
    // ABI 1 has no REFER: every cross-directory rename fails.
    expect(
        "rename at ABI 1",
        &fx.run(
            &p,
            &["--landlock-abi", "1"],
            &["rename", &fx.path("ws/a"), &fx.path("ws/sub/a")],
        ),
        "EXDEV",
    )?;
    // ABI 5 has no scopes.
    let name = format!("sbx-escape-abi-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _l = UnixListener::bind_addr(&addr).unwrap();
    expect(
        "abstract at ABI 5",
        &fx.run(&p, &["--landlock-abi", "5"], &["abstract-connect", &name]),
        "OK",
    )?;
    // While the real ABI still denies all three.
    expect(
        "truncate",
        &fx.run(&p, &[], &["truncate", &fx.path("ro/file")]),
        "EACCES",
    )?;
    expect(
        "abstract",
        &fx.run(&p, &[], &["abstract-connect", &name]),
        "EPERM",
    )
}

fn no_landlock(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    let out = fx.run(
        &p,
        &["--landlock-abi", "0"],
        &["read", &fx.path("outside/secret")],
    );
    expect("best effort without Landlock", &out, "OK")?;
    check(out.stderr.matches("warning: Landlock").count() == 1, || {
        out.stderr.clone()
    })?;
    let req = fx.policy_read_only("required", "");
    let data = fx.path("ws/data");
    let out = fx.run(&req, &["--landlock-abi", "0"], &["read", &data]);
    code("required without Landlock", &out, 125)?;
    check(!out.stdout.contains("OK"), || "the command ran".into())?;
    // The same required policy runs on the real kernel.
    expect(
        "required, real ABI",
        &fx.run(&req, &[], &["read", &data]),
        "OK",
    )
}

use std::path::Path;

fn required_inexact(fx: &Fx) -> Result<(), String> {
    // A read-only carve-out under the writable workspace: Landlock cannot
    // express it.
    let carve = "\n[[fs]]\npath = \"sub\"\nread = true\n";
    let extra = &format!("{carve}{NEVER}");
    let p = fx.policy("required", extra);
    let marker = fx.path("ws/marker");
    let out = fx.run(&p, &[], &["write", &marker]);
    code("run", &out, 125)?;
    check(out.stderr.contains("required"), || out.stderr.clone())?;
    check(!Path::new(&marker).exists(), || "the command ran".into())?;
    let compile: Vec<OsString> = vec![
        "compile".into(),
        p.clone().into(),
        "--target".into(),
        "linux".into(),
        "--workspace".into(),
        fx.ws.clone().into(),
    ];
    code("compile", &fx.sbx(&compile, None), 1)?;
    // With namespaces (the default) it is exact: `ns_required_carve_out_runs`.
    // best_effort runs it, and the carve-out really is writable (wider).
    let be = fx.policy("best_effort", extra);
    expect(
        "best effort",
        &fx.run(&be, &[], &["write", &fx.path("ws/sub/x")]),
        "OK",
    )
}

fn portable_artifact(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", NEVER);
    let art = fx.root.join("linux.json");
    let compile: Vec<OsString> = vec![
        "compile".into(),
        p.into(),
        "--target".into(),
        "linux".into(),
        "--portable".into(),
        "-o".into(),
        art.clone().into(),
    ];
    code("compile", &fx.sbx(&compile, None), 0)?;
    let text = std::fs::read_to_string(&art).unwrap();
    check(text.contains("${WORKSPACE}"), || text.clone())?;
    let run = |op: &str, path: &str| fx.run_artifact(&art, &[op, path]);
    expect("write ws", &run("write", &fx.path("ws/new")), "OK")?;
    expect(
        "read outside",
        &run("read", &fx.path("outside/secret")),
        "EACCES",
    )
}

/// A pseudo-terminal pair: (master, slave path).
fn pty() -> (std::fs::File, String) {
    use std::os::fd::FromRawFd;
    // SAFETY: standard posix_openpt sequence; the fd is owned by the File.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(m >= 0 && libc::grantpt(m) == 0 && libc::unlockpt(m) == 0);
        let mut buf = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, buf.as_mut_ptr(), buf.len()), 0);
        let name = std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_str()
            .unwrap()
            .to_string();
        (std::fs::File::from_raw_fd(m), name)
    }
}

/// Start `sbx run` as the session leader of a fresh terminal, the way a
/// shell runs a foreground job.
pub(crate) fn on_terminal(fx: &Fx, p: &Path, cmd: &[&str]) -> (std::process::Child, std::fs::File) {
    let mut c = std::process::Command::new(crate::fixture::sbx_bin());
    c.env("HOME", fx.root.join("home"))
        .arg("run")
        .arg(p)
        .arg("--workspace")
        .arg(&fx.ws)
        .arg("--")
        .args(cmd);
    spawn_on_terminal(c)
}

/// `c` in a session of its own whose controlling terminal is a new pty;
/// the pty's master side is returned.
fn spawn_on_terminal(mut c: std::process::Command) -> (std::process::Child, std::fs::File) {
    use std::os::unix::process::CommandExt;
    let (master, slave) = pty();
    let tty = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave)
            .unwrap()
    };
    c.stdin(tty()).stdout(tty()).stderr(tty());
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        c.pre_exec(|| {
            libc::setsid();
            if libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    (c.spawn().unwrap(), master)
}

/// POLICY.md §13: no process of the sandbox reads the user's terminal
/// once `sbx run` has returned. The probe leaves behind a process that
/// takes the terminal's foreground group (TIOCSPGRP, SIGTTOU ignored) and
/// copies what is typed; the harness types a line after the run returned.
/// Control: run unsandboxed on a terminal, the same probe reads the line.
fn terminal_after_the_run(fx: &Fx) -> Result<(), String> {
    use std::io::Write;
    let p = fx.policy("best_effort", "");
    let probe = std::env::current_exe().unwrap();
    let probe = probe.to_str().unwrap();
    for sandboxed in [false, true] {
        let beat = fx.path(&format!("ws/beat-{sandboxed}"));
        let typed = fx.path(&format!("ws/typed-{sandboxed}"));
        let args = [probe, "--probe", "tty-grab", &beat, &typed];
        let (mut child, mut master) = if sandboxed {
            on_terminal(fx, &p, &args)
        } else {
            let mut c = std::process::Command::new(args[0]);
            c.args(&args[1..]);
            spawn_on_terminal(c)
        };
        let st = child.wait().unwrap();
        check(st.success(), || format!("sandboxed {sandboxed}: {st:?}"))?;
        // The grab happened while the run lasted (its pid is written).
        let text = std::fs::read_to_string(&beat).unwrap_or_default();
        let pid = text.lines().next().unwrap_or("").to_string();
        check(!pid.is_empty(), || {
            format!("sandboxed {sandboxed}: no grab ({text:?})")
        })?;
        master.write_all(b"typed-after\n").unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let got = std::fs::read_to_string(&typed).unwrap_or_default();
        let before = std::fs::metadata(&beat).map(|m| m.len()).unwrap_or(0);
        std::thread::sleep(Duration::from_millis(300));
        let after = std::fs::metadata(&beat).map(|m| m.len()).unwrap_or(0);
        if sandboxed {
            check(!got.contains("typed-after") && before == after, || {
                format!("after the run: read {got:?}, heartbeat {before} -> {after}")
            })?;
        } else {
            check(got.contains("typed-after") && after > before, || {
                format!("control: read {got:?}, heartbeat {before} -> {after}")
            })?;
            if let Ok(pid) = pid.parse::<i32>() {
                if pid > 1 {
                    // SAFETY: the control's leftover, a process we started.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
    }
    Ok(())
}

fn wait_status(pid: i32, flags: i32) -> i32 {
    let mut st = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut st, flags) };
    st
}

fn terminal(fx: &Fx) -> Result<(), String> {
    use std::io::Write;
    let p = fx.policy("best_effort", "");
    // ^C reaches the child's group, which owns the terminal.
    let (child, mut master) = on_terminal(fx, &p, &["sleep", "30"]);
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(800));
    master.write_all(b"\x03").unwrap();
    let start = std::time::Instant::now();
    let st = wait_status(pid, 0);
    check(
        libc::WIFEXITED(st)
            && libc::WEXITSTATUS(st) == 130
            && start.elapsed() < Duration::from_secs(5),
        || format!("^C: status {st:#x} after {:?}", start.elapsed()),
    )?;
    // ^Z stops the child, and sbx stops too so a shell sees the job
    // stopped; SIGCONT to sbx's group (what `fg` does) resumes both.
    let (child, mut master) = on_terminal(fx, &p, &["sh", "-c", "sleep 1; exit 5"]);
    let pid = child.id() as i32;
    std::thread::sleep(Duration::from_millis(400));
    master.write_all(b"\x1a").unwrap();
    let st = wait_status(pid, libc::WUNTRACED);
    check(libc::WIFSTOPPED(st), || {
        format!("^Z: sbx not stopped: {st:#x}")
    })?;
    // SAFETY: sbx leads its own session and group.
    unsafe { libc::kill(-pid, libc::SIGCONT) };
    let st = wait_status(pid, 0);
    check(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 5, || {
        format!("after fg: status {st:#x}")
    })
}

/// A loopback server that answers every connection with "yes".
fn answering_server(v6: bool) -> (std::thread::JoinHandle<()>, String) {
    let l = TcpListener::bind(if v6 { "[::1]:0" } else { "127.0.0.1:0" }).unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let h = std::thread::spawn(move || {
        use std::io::{Read, Write};
        l.set_nonblocking(false).unwrap();
        // Bounded: the unsandboxed control and at most one escape per op.
        for _ in 0..6 {
            let Ok((mut c, _)) = l.accept() else { return };
            let mut b = [0u8; 2];
            let _ = c.read(&mut b);
            let _ = c.write_all(b"yes");
        }
    });
    (h, port)
}

/// TCP Fast Open connects inside `sendto`/`sendmsg`, where Landlock's
/// connect check never runs: refused (EOPNOTSUPP, as with Fast Open
/// off) with no net rules and with a port-only rule, on IPv4 and IPv6.
/// Controls: the same probe works unsandboxed, and a plain connect to
/// the allowed port works in the sandbox.
fn tcp_fast_open(fx: &Fx) -> Result<(), String> {
    for v6 in [false, true] {
        let (_h, port) = answering_server(v6);
        let fam = if v6 { "6" } else { "4" };
        expect(
            "unsandboxed fast open",
            &fx.unsandboxed(&["tfo-sendto", fam, &port]),
            "OK",
        )?;
        let none = fx.policy("best_effort", "");
        let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
        let okp = allowed.local_addr().unwrap().port().to_string();
        let port_rule = fx.policy_read_only(
            "required",
            &format!("\n[[net]]\nhost = \"*\"\nport = {okp}\n"),
        );
        for p in [&none, &port_rule] {
            for op in ["tfo-sendto", "tfo-sendmsg"] {
                expect(
                    &format!("{op} v{fam}"),
                    &fx.run(p, &[], &[op, fam, &port]),
                    "EOPNOTSUPP",
                )?;
            }
        }
        expect(
            "connect to the allowed port",
            &fx.run(&port_rule, &[], &["connect-tcp", &okp]),
            "OK",
        )?;
    }
    Ok(())
}

/// `prlimit`, `setpriority` and `sched_setaffinity` on a process outside
/// the sandbox are refused; the same calls on the caller itself work.
fn host_process_limits(fx: &Fx) -> Result<(), String> {
    let mut v = victim();
    let pid = v.id().to_string();
    let p = fx.policy("best_effort", "");
    let r = (|| {
        expect(
            "unsandboxed prlimit",
            &fx.unsandboxed(&["prlimit", &pid]),
            "OK",
        )?;
        expect(
            "prlimit host",
            &fx.run(&p, &[], &["prlimit", &pid]),
            "EPERM",
        )?;
        expect("prlimit self", &fx.run(&p, &[], &["prlimit", "0"]), "OK")?;
        expect(
            "renice host",
            &fx.run(&p, &[], &["setpriority", &pid, "5"]),
            "EPERM",
        )?;
        expect(
            "renice all of the user's",
            &fx.run(&p, &[], &["setpriority-user", "5"]),
            "EPERM",
        )?;
        expect(
            "renice self",
            &fx.run(&p, &[], &["setpriority", "0", "5"]),
            "OK",
        )?;
        expect(
            "affinity host",
            &fx.run(&p, &[], &["setaffinity", &pid]),
            "EPERM",
        )?;
        expect(
            "affinity self",
            &fx.run(&p, &[], &["setaffinity", "0"]),
            "OK",
        )
    })();
    let _ = v.kill();
    let _ = v.wait();
    r
}

/// No set-user-ID or set-group-ID file comes out of a run, by any route
/// that takes a mode, and no file capability. Controls: ordinary modes
/// work in the sandbox, and the set-user-ID chmod works unsandboxed.
fn set_user_id(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    let f = fx.path("ws/data");
    let plain = fx.path("ws/plain");
    std::fs::write(&plain, "x").unwrap();
    expect(
        "unsandboxed",
        &fx.unsandboxed(&["chmod", &plain, "4755"]),
        "OK",
    )?;
    for mode in ["4755", "2755", "6777"] {
        expect("chmod", &fx.run(&p, &[], &["chmod", &f, mode]), "EPERM")?;
        expect("fchmod", &fx.run(&p, &[], &["fchmod", &f, mode]), "EPERM")?;
        expect(
            "fchmodat",
            &fx.run(&p, &[], &["fchmodat", &f, mode]),
            "EPERM",
        )?;
        let new = fx.path(&format!("ws/new{mode}"));
        expect(
            "open O_CREAT",
            &fx.run(&p, &[], &["create", &new, mode]),
            "EPERM",
        )?;
        expect(
            "O_TMPFILE",
            &fx.run(&p, &[], &["tmpfile-link", &fx.path("ws"), &new, mode]),
            "EPERM",
        )?;
        expect("mknod", &fx.run(&p, &[], &["mknod", &new, mode]), "EPERM")?;
    }
    expect("mode unchanged", &fx.run(&p, &[], &["mode", &f]), "644")?;
    expect("openat2", &fx.run(&p, &[], &["openat2", &f]), "ENOSYS")?;
    expect(
        "file capability",
        &fx.run(&p, &[], &["set-file-capability", &f]),
        "EPERM",
    )?;
    // Controls under the same policy.
    expect("chmod 755", &fx.run(&p, &[], &["chmod", &f, "755"]), "OK")?;
    let ok = fx.path("ws/ordinary");
    expect(
        "create 0644",
        &fx.run(&p, &[], &["create", &ok, "644"]),
        "OK",
    )?;
    expect(
        "O_TMPFILE 0600",
        &fx.run(
            &p,
            &[],
            &["tmpfile-link", &fx.path("ws"), &fx.path("ws/tmp"), "600"],
        ),
        "OK",
    )
}

fn alive(pid: &str) -> bool {
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !state.is_empty()
        && !state
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
}

/// A process the command leaves behind, however deep and in whatever
/// session, dies when the command exits, with or without a wall-clock
/// limit. The chain is longer than any fixed depth limit would reach.
/// Control: the last process was alive while the command ran (the probe
/// waited for it to report).
fn nothing_outlives(fx: &Fx) -> Result<(), String> {
    for extra in ["", "\n[limits]\nwall_time_s = 30\n"] {
        let p = fx.policy("best_effort", &format!("{extra}{NEVER}"));
        for depth in ["1", "100"] {
            let out = fx.run(&p, &[], &["daemon-chain", depth]);
            code("daemon chain", &out, 0)?;
            let pid = out.answer().to_string();
            check(pid.parse::<i32>().is_ok(), || format!("{out:?}"))?;
            // Run ended within the deadline: every holder of its stdout
            // was gone (the harness read to EOF).
            check(out.elapsed < Duration::from_secs(30), || {
                format!("took {:?}", out.elapsed)
            })?;
            check(!alive(&pid), || {
                format!("depth {depth}: {pid} still running")
            })?;
        }
    }
    // `sh -c 'sleep & exit'` under a limit: gone at once, not at the limit.
    let p = fx.policy(
        "best_effort",
        &format!("\n[limits]\nwall_time_s = 30\n{NEVER}"),
    );
    let out = fx.run(&p, &[], &["spawn-sleeper", "0"]);
    let pid = out.stdout.lines().next().unwrap_or("").trim().to_string();
    check(!pid.is_empty() && !alive(&pid), || {
        format!("sleeper: {out:?}")
    })
}

/// A process the command makes with `CLONE_PARENT` is sbx's child, and
/// in a PID namespace one its init waits for: the run still ends as the
/// command does, with the namespaces (the default as root and in a user
/// namespace) and without. The sleeper would hold the run for 40 s; the
/// run's exit code is the command's (the control: the probe ran).
fn sibling_does_not_hold(fx: &Fx) -> Result<(), String> {
    for extra in ["", NEVER] {
        let p = fx.policy("best_effort", extra);
        let out = fx.run(&p, &[], &["sibling-sleeper", "40"]);
        code("sibling", &out, 0)?;
        check(out.answer() == "OK", || format!("{extra:?}: {out:?}"))?;
        check(out.elapsed < Duration::from_secs(20), || {
            format!("{extra:?}: the run took {:?}", out.elapsed)
        })?;
    }
    Ok(())
}

/// An artifact that lacks the baseline (here: an empty seccomp deny list)
/// is refused before anything runs; the artifact as written runs.
fn artifact_baseline(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    let art = fx.root.join("base.json");
    let compile: Vec<OsString> = vec![
        "compile".into(),
        p.into(),
        "--target".into(),
        "linux".into(),
        "-o".into(),
        art.clone().into(),
    ];
    code("compile", &fx.sbx(&compile, None), 0)?;
    let run = |art: &std::path::Path| {
        let args: Vec<OsString> = vec![
            "run".into(),
            "--artifact".into(),
            art.into(),
            "--".into(),
            std::env::current_exe().unwrap().into(),
            "--probe".into(),
            "exit".into(),
            "0".into(),
        ];
        fx.sbx(&args, None)
    };
    code("as written", &run(&art), 0)?;
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&art).unwrap()).unwrap();
    for key in ["deny", "deny_args"] {
        let mut d = doc.clone();
        d["seccomp"][key] = serde_json::json!([]);
        let edited = fx.root.join(format!("edited-{key}.json"));
        std::fs::write(&edited, d.to_string()).unwrap();
        let out = run(&edited);
        code(key, &out, 125)?;
        check(out.stderr.contains("baseline"), || out.stderr.clone())?;
    }
    Ok(())
}

/// A portable artifact grants `build` read-write; at run time `build` is
/// a symlink to a directory outside. The rule is dropped with a warning,
/// as `sbx run POLICY` drops it (SBX019); ordinary workspace writes work.
fn artifact_symlink_out(fx: &Fx) -> Result<(), String> {
    let p = fx.policy(
        "best_effort",
        &format!("\n[[fs]]\npath = \"build\"\nread = true\nwrite = true\n{NEVER}"),
    );
    let art = fx.root.join("portable.json");
    let compile: Vec<OsString> = vec![
        "compile".into(),
        p.clone().into(),
        "--target".into(),
        "linux".into(),
        "--portable".into(),
        "-o".into(),
        art.clone().into(),
    ];
    code("compile", &fx.sbx(&compile, None), 0)?;
    std::os::unix::fs::symlink(fx.root.join("outside"), fx.ws.join("build")).unwrap();
    let run = |op: &str, path: &str| fx.run_artifact(&art, &[op, path]);
    let out = run("write", &fx.path("ws/build/planted"));
    expect("write through the link", &out, "EACCES")?;
    check(out.stderr.contains("outside the workspace"), || {
        out.stderr.clone()
    })?;
    expect("write ws", &run("write", &fx.path("ws/new")), "OK")?;
    // The policy itself, the same way.
    expect(
        "policy: write through the link",
        &fx.run(&p, &[], &["write", &fx.path("ws/build/planted2")]),
        "EACCES",
    )
}

/// A rule's directory is swapped with a symlink to an outside directory
/// (`renameat2(RENAME_EXCHANGE)` in a loop) while `sbx run` checks and
/// opens it: in 50 runs, the outside secret is never read. Control: a
/// file inside the real directory is read when the swap happens to be
/// back.
fn swap_race(fx: &Fx) -> Result<(), String> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let d = fx.ws.join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("inside"), "in").unwrap();
    let swap = fx.ws.join("swap");
    std::os::unix::fs::symlink(fx.root.join("outside"), &swap).unwrap();
    // Only `d` is granted: the workspace itself is not readable here.
    let text = "version = 1\n[process]\npresets = [\"system_runtime\"]\n[[fs]]\npath = \"d\"\nread = true\n";
    let p = fx.root.join("swap.toml");
    std::fs::write(&p, text).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (a, b) = (
        std::ffi::CString::new(d.to_str().unwrap()).unwrap(),
        std::ffi::CString::new(swap.to_str().unwrap()).unwrap(),
    );
    let flag = stop.clone();
    let swapper = std::thread::spawn(move || {
        let mut n = 0u64;
        while !flag.load(Ordering::Relaxed) {
            // SAFETY: two NUL-terminated paths.
            unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            n += 1;
        }
        n
    });
    let secret = fx.path("outside/secret");
    let mut leaked = 0;
    let mut errors = Vec::new();
    let mut refused = 0;
    for _ in 0..50 {
        let out = fx.run(&p, &[], &["read", &secret]);
        // No run may fall back to Landlock alone because a path changed
        // during set-up (POLICY.md §13: no silent downgrade).
        if out.stderr.contains("Landlock alone") {
            errors.push(format!("fell back: {out:?}"));
        }
        match out.answer() {
            // ENOENT: with the namespace layer, outside is not even there.
            "EACCES" | "ENOENT" => {}
            "OK" => leaked += 1,
            // The swap caught during set-up: the run ends, naming the path.
            "" if out.code == 125
                && out.stderr.contains("nothing was run")
                && out.stderr.contains(d.to_str().unwrap()) =>
            {
                refused += 1
            }
            _ => errors.push(format!("{out:?}")),
        }
    }
    eprintln!("swap race: {refused} of 50 runs refused at set-up");
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    // Leave `d` a directory again for the control.
    if std::fs::symlink_metadata(&d)
        .unwrap()
        .file_type()
        .is_symlink()
    {
        std::fs::rename(&d, fx.ws.join("tmp")).unwrap();
        std::fs::rename(&swap, &d).unwrap();
        std::fs::rename(fx.ws.join("tmp"), &swap).unwrap();
    }
    check(leaked == 0, || {
        format!("read outside in {leaked} of 50 runs")
    })?;
    check(errors.is_empty(), || errors.join("\n"))?;
    check(swaps > 100, || format!("only {swaps} swaps"))?;
    expect(
        "read inside",
        &fx.run(&p, &[], &["read", d.join("inside").to_str().unwrap()]),
        "OK",
    )
}

/// Whether `sbx run` enforces the protections of `policy` exactly here:
/// with Landlock alone it cannot (rights are additive) and says `wider`;
/// the namespace layer (issue #14) makes them read-only bind mounts.
/// `rule`: the label whose report line is looked at.
pub fn protections_exact(
    fx: &Fx,
    policy: &Path,
    flags: &[&str],
    rule: &str,
) -> Result<bool, String> {
    let mut f = vec!["--report"];
    f.extend(flags);
    let out = fx.run(policy, &f, &["read", &fx.path("ws/data")]);
    expect("report run", &out, "OK")?;
    let wider = out
        .stderr
        .lines()
        // Paths absent at launch are reported, not mounted (advisory).
        .find(|l| l.contains(&format!("wider {rule}")) && !l.contains("does not exist at launch"));
    if let Some(line) = wider {
        // Only a host without namespaces may fall back on Landlock alone.
        check(out.stderr.contains("namespaces are not available"), || {
            format!("{rule} is wider although namespaces are available: {line}")
        })?;
        eprintln!("  (skipped: namespaces are not available here: {line})");
    }
    Ok(wider.is_none())
}

/// POLICY.md §7a: what runs later outside the sandbox cannot be planted
/// from inside it, in the workspace's repository and through a worktree's
/// `.git` file; the rest of `.git` and the workspace stay writable.
fn protected_paths(fx: &Fx) -> Result<(), String> {
    let mk = |rel: &str| std::fs::create_dir_all(fx.path(rel)).unwrap();
    let put = |rel: &str, text: &str| std::fs::write(fx.path(rel), text).unwrap();
    for d in [
        "ws/.git/hooks",
        "ws/.git/objects",
        "ws/.vscode",
        "main/.git/hooks",
    ] {
        mk(d);
    }
    mk("main/.git/worktrees/wt");
    put("ws/.git/config", "[core]\n\tbare = false\n");
    put("ws/.vscode/settings.json", "{}");
    put("main/.git/config", "[core]\n\tbare = false\n");
    put("main/.git/worktrees/wt/commondir", "../..\n");
    mk("ws/wt");
    put(
        "ws/wt/.git",
        &format!("gitdir: {}\n", fx.path("main/.git/worktrees/wt")),
    );
    put("ws/evil", "[core]\n\tfsmonitor = touch /tmp/pwned\n");
    put("ws/.git/evil", "[core]\n\tfsmonitor = touch /tmp/pwned\n");
    // The main repository is writable too, so its protection is what holds.
    let extra = format!(
        "\n[[fs]]\npath = \"{}\"\nread = true\nwrite = true\n",
        fx.path("main")
    );
    let p = fx.policy("best_effort", &extra);
    if !protections_exact(fx, &p, &[], "protected .git/hooks")? {
        return Ok(());
    }
    let r = |args: &[&str]| fx.run(&p, &[], args);
    let hook = fx.path("ws/.git/hooks/pre-commit");
    expect("plant a hook", &r(&["write", &hook]), "EROFS")?;
    let config = fx.path("ws/.git/config");
    expect("append to .git/config", &r(&["write", &config]), "EROFS")?;
    expect("truncate .git/config", &r(&["truncate", &config]), "EROFS")?;
    expect(
        "rename over .git/config",
        &r(&["rename", &fx.path("ws/.git/evil"), &config]),
        "EBUSY",
    )?;
    // `.git` is pinned (docs/protected.md): from outside it the rename
    // crosses a mount.
    expect(
        "rename into .git from the workspace",
        &r(&["rename", &fx.path("ws/evil"), &config]),
        "EXDEV",
    )?;
    expect(
        "tasks.json into .vscode",
        &r(&["write", &fx.path("ws/.vscode/tasks.json")]),
        "EROFS",
    )?;
    expect(
        "hook through a worktree",
        &r(&["write", &fx.path("main/.git/hooks/post-checkout")]),
        "EROFS",
    )?;
    expect(
        "repoint the worktree's .git file",
        &r(&["write", &fx.path("ws/wt/.git")]),
        "EROFS",
    )?;
    // Positive controls under the same policy.
    expect("read .git/config", &r(&["read", &config]), "OK")?;
    expect(
        "git objects",
        &r(&["write", &fx.path("ws/.git/objects/ab")]),
        "OK",
    )?;
    expect(
        "the main repository's objects",
        &r(&["write", &fx.path("main/.git/objects-x")]),
        "OK",
    )?;
    expect("workspace file", &r(&["write", &fx.path("ws/new")]), "OK")?;
    check(!Path::new(&hook).exists(), || "a hook was planted".into())
}

/// POLICY.md §7: with home as a broad grant, `~/.ssh` is hidden and the
/// rest of home readable; a rule naming it makes it readable, and `sbx
/// run` says so before the command starts.
fn covered_sensitive(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir_all(fx.path("home/.ssh")).unwrap();
    std::fs::write(fx.path("home/.ssh/id_rsa"), "key").unwrap();
    std::fs::write(fx.path("home/notes"), "notes").unwrap();
    let home = fx.path("home");
    let flags = ["--home", home.as_str()];
    let covered = fx.policy(
        "best_effort",
        &format!("\n[[fs]]\npath = \"{home}\"\nread = true\n"),
    );
    let named = fx.policy(
        "best_effort",
        &format!(
            "\n[[fs]]\npath = \"{home}\"\nread = true\n\n[[fs]]\npath = \"~/.ssh\"\nread = true\n"
        ),
    );
    let key = fx.path("home/.ssh/id_rsa");
    let out = fx.run(&named, &flags, &["read", &key]);
    expect("named: readable", &out, "OK")?;
    check(
        out.stderr.contains("warning[SBX033]") && out.stderr.contains("~/.ssh/"),
        || out.stderr.clone(),
    )?;
    let out = fx.run(&covered, &flags, &["read", &fx.path("home/notes")]);
    expect("the rest of home", &out, "OK")?;
    check(
        out.stderr.contains("warning[SBX029]") && out.stderr.contains("~/.ssh/"),
        || out.stderr.clone(),
    )?;
    if !protections_exact(fx, &covered, &flags, "sensitive ~/.ssh/")? {
        return Ok(());
    }
    // An empty mode-0 directory, which no one may enter: the command
    // holds no CAP_DAC_OVERRIDE, root included.
    expect(
        "covered: hidden",
        &fx.run(&covered, &flags, &["read", &key]),
        "EACCES",
    )
}

/// POLICY.md §13: a run cannot widen the next one. The policy file and
/// the artifact it was started from sit in the writable workspace; the
/// child can neither write them nor rename a file over them, and the
/// rest of the workspace stays writable.
fn own_files_read_only(fx: &Fx) -> Result<(), String> {
    let p = fx.policy("best_effort", "");
    let own = fx.path("ws/own.toml");
    std::fs::copy(&p, &own).unwrap();
    let own = Path::new(&own);
    let art = fx.path("ws/own.json");
    code("compile", &fx.compile_linux(own, Path::new(&art)), 0)?;
    let out = fx.run(own, &["--report"], &["read", &fx.path("ws/data")]);
    expect("report run", &out, "OK")?;
    if out.stderr.contains("namespaces are not available") {
        eprintln!("  (skipped: namespaces are not available here)");
        return Ok(());
    }
    let evil = fx.path("ws/evil.toml");
    std::fs::write(&evil, "version = 1\n[[fs]]\npath = \"/\"\nwrite = true\n").unwrap();
    let before = (std::fs::read(own).unwrap(), std::fs::read(&art).unwrap());
    let by_policy = |args: &[&str]| fx.run(own, &[], args);
    let by_artifact = |args: &[&str]| fx.run_artifact(Path::new(&art), args);
    for (name, run, target) in [
        (
            "policy",
            &by_policy as &dyn Fn(&[&str]) -> Out,
            own.to_str().unwrap(),
        ),
        ("artifact", &by_artifact, art.as_str()),
    ] {
        expect(
            &format!("{name} run writes {target}"),
            &run(&["write", target]),
            "EROFS",
        )?;
        expect(
            &format!("{name} run renames over {target}"),
            &run(&["rename", &evil, target]),
            "EBUSY",
        )?;
        expect(
            &format!("{name} run: workspace file"),
            &run(&["write", &fx.path("ws/new")]),
            "OK",
        )?;
    }
    check(
        before == (std::fs::read(own).unwrap(), std::fs::read(&art).unwrap()),
        || "the policy or artifact changed".into(),
    )
}

/// POLICY.md §7a, a protected path absent at launch: no mount can stop
/// its creation, so what the command creates there is moved aside once
/// the run has ended. Nothing planted is left where git, direnv or an
/// editor would run it; ordinary files stay.
fn planted_moved_aside(fx: &Fx) -> Result<(), String> {
    std::fs::create_dir_all(fx.path("ws/.git/objects")).unwrap();
    std::fs::write(fx.path("ws/.git/config"), "[core]\n").unwrap();
    let p = fx.policy("best_effort", "");
    for (what, op, rel) in [
        ("an editor folder", "mkdir", "ws/.vscode"),
        ("an .envrc", "write", "ws/.envrc"),
        ("a hooks directory", "mkdir", "ws/.git/hooks"),
        ("a gitdir's commondir", "write", "ws/.git/commondir"),
    ] {
        let path = fx.path(rel);
        let out = fx.run(&p, &[], &[op, &path]);
        // Created during the run (the rights of the workspace apply)…
        expect(what, &out, "OK")?;
        // …and gone from its place once it ended.
        check(!Path::new(&path).exists(), || {
            format!("{path} is still there")
        })?;
        let aside = format!("{path}.sbx-blocked");
        check(Path::new(&aside).exists(), || format!("no {aside}"))?;
        check(
            out.stderr.contains(&format!("created {path}")) && out.stderr.contains(&aside),
            || out.stderr.clone(),
        )?;
    }
    // Positive control: an ordinary file stays, and nothing is said.
    let new = fx.path("ws/new-file");
    let out = fx.run(&p, &[], &["write", &new]);
    expect("ordinary file", &out, "OK")?;
    check(Path::new(&new).exists(), || {
        "the ordinary file is gone".into()
    })?;
    check(!out.stderr.contains("sbx-blocked"), || out.stderr.clone())
}
