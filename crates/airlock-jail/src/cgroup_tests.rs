//! Tests of the cgroup module: parsers and planning on sample text, then real-kernel tests that
//! create, fill, limit and destroy cgroups (they fail loudly where cgroups are unusable).

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::box_cgroup::validate_name;
use super::hierarchy::{self, v2_controller_state, Controller, V2DirState};
use super::limits::cpu_quota_us;
use super::parse::{self, CgroupFsType};
use super::*;

const MIB: u64 = 1 << 20;

// ---------------------------------------------------------------- parsers (pure)

const HYBRID_PROC_CGROUP: &str = "\
9:name=systemd:/
8:pids:/
4:memory:/process_api/0e9f8d8edd9fed8c555421e75260d107
1:cpu,cpuacct:/box
0::/
";

const HYBRID_MOUNTINFO: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

#[test]
fn parses_proc_cgroup_v1_and_v2_lines() {
    let entries = parse::parse_proc_cgroup(HYBRID_PROC_CGROUP);
    assert_eq!(entries.len(), 5);
    assert_eq!(entries[0].controllers, vec!["name=systemd"]);
    assert_eq!(entries[2].hierarchy_id, 4);
    assert!(entries[2].has_controller("memory"));
    assert_eq!(
        entries[2].path,
        "/process_api/0e9f8d8edd9fed8c555421e75260d107"
    );
    assert!(entries[3].has_controller("cpu") && entries[3].has_controller("cpuacct"));
    assert_eq!(entries[4].hierarchy_id, 0);
    assert!(entries[4].controllers.is_empty());
    assert_eq!(entries[4].path, "/");
}

#[test]
fn proc_cgroup_skips_malformed_lines_and_keeps_colons_in_paths() {
    let entries =
        parse::parse_proc_cgroup("garbage\nx:memory:/a\n3:cpu\n0::/a:b/c\n5:pids:relative\n");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].path, "/a:b/c");
}

#[test]
fn parses_cgroup_mounts_from_mountinfo() {
    let mounts = parse::parse_mountinfo(HYBRID_MOUNTINFO);
    assert_eq!(mounts.len(), 5, "ext4 and tmpfs are not cgroup mounts");
    assert_eq!(mounts[0].fs_type, CgroupFsType::V1);
    assert_eq!(
        mounts[0].mount_point,
        Path::new("/sys/fs/cgroup/cpu,cpuacct")
    );
    assert!(mounts[0].has_option("cpu") && mounts[0].has_option("cpuacct"));
    assert!(!mounts[1].has_option("cpu"));
    assert_eq!(mounts[4].fs_type, CgroupFsType::V2);
    assert_eq!(mounts[4].root, "/");
}

#[test]
fn mountinfo_unescapes_octal_and_reads_nested_roots() {
    let line =
        "50 1 0:40 /user.slice/a\\040b /mnt/my\\040cg\\134x rw - cgroup2 none rw,nsdelegate\n";
    let mounts = parse::parse_mountinfo(line);
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].root, "/user.slice/a b");
    assert_eq!(mounts[0].mount_point, Path::new("/mnt/my cg\\x"));
    assert!(mounts[0].has_option("nsdelegate"));
    assert_eq!(
        parse::unescape_octal("\\0"),
        "\\0",
        "short escapes are kept"
    );
    assert_eq!(
        parse::unescape_octal("a\\999"),
        "a\\999",
        "non-octal escapes are kept"
    );
}

#[test]
fn mountinfo_ignores_truncated_lines() {
    assert!(parse::parse_mountinfo("1 2 0:3 / /x - cgroup2\n").is_empty());
    assert!(parse::parse_mountinfo("- cgroup2 none rw\n").is_empty());
    assert!(parse::parse_mountinfo("").is_empty());
}

#[test]
fn maps_cgroup_paths_through_mount_roots() {
    let mp = Path::new("/sys/fs/cgroup/memory");
    assert_eq!(
        parse::cgroup_dir(mp, "/", "/a/b"),
        Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
    );
    assert_eq!(parse::cgroup_dir(mp, "/", "/"), Some(mp.to_path_buf()));
    assert_eq!(
        parse::cgroup_dir(mp, "/docker/abc", "/docker/abc/x"),
        Some(PathBuf::from("/sys/fs/cgroup/memory/x"))
    );
    assert_eq!(parse::cgroup_dir(mp, "/docker/abc", "/docker/other"), None);
    assert_eq!(
        parse::cgroup_dir(mp, "/docker/ab", "/docker/abc"),
        None,
        "component-wise prefix"
    );
    assert_eq!(
        parse::cgroup_dir(mp, "/", "/../outside"),
        None,
        "outside our cgroup namespace"
    );
}

#[test]
fn reads_event_counters() {
    let oom_control = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
    assert_eq!(parse::flat_keyed_value(oom_control, "oom_kill"), Some(3));
    assert_eq!(parse::flat_keyed_value(oom_control, "oom"), None);
    let memory_events = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n";
    assert_eq!(parse::flat_keyed_value(memory_events, "oom_kill"), Some(1));
    assert_eq!(parse::flat_keyed_value(memory_events, "max"), Some(12));
    assert_eq!(parse::flat_keyed_value("max 7\n", "max"), Some(7));
    assert_eq!(parse::flat_keyed_value("max lots\n", "max"), None);
    assert_eq!(parse::single_value("67108864\n"), Some(64 * MIB));
    assert_eq!(parse::single_value("max\n"), None);
    assert_eq!(parse::pid_list("12\n34\n\n"), vec![12, 34]);
    assert_eq!(
        parse::controller_list("cpu memory pids\n"),
        vec!["cpu", "memory", "pids"]
    );
}

#[test]
fn stat_cpu_ticks_counts_own_and_reaped_time_after_a_name_with_parentheses() {
    let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 5 0 0";
    assert_eq!(parse::stat_cpu_ticks(stat), Some(7 + 3 + 20 + 10));
    assert_eq!(parse::stat_cpu_ticks("42 (x) S 1"), None);
    assert_eq!(parse::stat_cpu_ticks("no parenthesis"), None);
}

#[test]
fn a_box_cgroup_reports_the_cpu_time_of_its_processes() {
    let Ok(mut cg) = BoxCgroup::create(&unique_name("cpu-usage"), &CgroupLimits::default()) else {
        panic!("no usable cgroup hierarchy on this host: the usage test needs one");
    };
    // A child that burns ~150 ms of CPU, then waits to be measured.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; sleep 30",
        ])
        .spawn()
        .unwrap();
    cg.add_pid(child.id() as libc::pid_t).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let used = cg.cpu_usage_usec();
    let _ = child.kill();
    let _ = child.wait();
    let _ = cg.destroy();
    let used = used.expect("the member's CPU time is readable");
    assert!(
        used >= 10_000,
        "at least 10 ms of CPU measured, got {used} us"
    );
}

#[test]
fn cgroup_path_membership_is_component_wise() {
    assert!(parse::path_is_within("/a/airlock-1", "/a/airlock-1"));
    assert!(parse::path_is_within("/a/airlock-1/sub", "/a/airlock-1"));
    assert!(!parse::path_is_within("/a/airlock-10", "/a/airlock-1"));
    assert!(!parse::path_is_within("/a", "/a/airlock-1"));
    assert_eq!(parse::child_path("/", "b"), "/b");
    assert_eq!(parse::child_path("/a/", "b"), "/a/b");
}

// ---------------------------------------------------------------- planning (pure)

#[test]
fn plans_v1_sites_under_our_own_cgroups() {
    let entries = parse::parse_proc_cgroup(HYBRID_PROC_CGROUP);
    let mounts = parse::parse_mountinfo(HYBRID_MOUNTINFO);
    let sites = hierarchy::plan_v1(&entries, &mounts).expect("v1 controllers are bound");
    let memory = sites[0].as_ref().expect("memory site");
    assert_eq!(
        memory.parent,
        Path::new("/sys/fs/cgroup/memory/process_api/0e9f8d8edd9fed8c555421e75260d107")
    );
    assert_eq!(
        memory.cgroup_path,
        "/process_api/0e9f8d8edd9fed8c555421e75260d107"
    );
    assert_eq!(
        sites[1].as_ref().expect("pids").parent,
        Path::new("/sys/fs/cgroup/pids")
    );
    assert_eq!(
        sites[2].as_ref().expect("cpu").parent,
        Path::new("/sys/fs/cgroup/cpu,cpuacct/box")
    );
}

#[test]
fn pure_v2_hosts_do_not_plan_v1() {
    let entries = parse::parse_proc_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n");
    let mounts = parse::parse_mountinfo(
        "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
    );
    assert!(hierarchy::plan_v1(&entries, &mounts).is_none());
}

#[test]
fn mixed_v1_v2_reports_missing_controllers() {
    let entries = parse::parse_proc_cgroup("4:memory:/\n0::/\n");
    let mounts = parse::parse_mountinfo("35 31 0:32 / /cg/memory rw - cgroup cgroup rw,memory\n");
    let sites = hierarchy::plan_v1(&entries, &mounts).expect("memory is on v1");
    assert!(sites[0].is_ok());
    let reason = sites[1].as_ref().expect_err("pids is not on v1");
    assert!(reason.contains("pids"), "{reason}");
}

#[test]
fn v1_controller_without_visible_mount_is_unavailable() {
    let entries = parse::parse_proc_cgroup("4:memory:/outside\n8:pids:/\n1:cpu:/\n");
    let mounts = parse::parse_mountinfo(
        "35 31 0:32 /inside /cg/memory rw - cgroup cgroup rw,memory\n\
         39 31 0:36 / /cg/pids rw - cgroup cgroup rw,pids\n",
    );
    let sites = hierarchy::plan_v1(&entries, &mounts).expect("v1");
    assert!(sites[0].as_ref().expect_err("memory").contains("/outside"));
    assert!(sites[1].is_ok());
    assert!(sites[2].is_err(), "cpu is bound but not mounted");
}

fn v2_state() -> V2DirState {
    V2DirState {
        dir: PathBuf::from("/sys/fs/cgroup/user.slice/app.scope"),
        available: vec!["cpu".into(), "memory".into(), "pids".into()],
        enabled: vec![],
        has_processes: false,
        is_root: false,
        subtree_writable: true,
    }
}

#[test]
fn v2_controller_enabled_already_needs_nothing() {
    let state = V2DirState {
        enabled: vec!["memory".into()],
        has_processes: true,
        ..v2_state()
    };
    assert_eq!(v2_controller_state(&state, Controller::Memory), Ok(false));
}

#[test]
fn v2_controller_available_in_empty_cgroup_can_be_enabled() {
    assert_eq!(v2_controller_state(&v2_state(), Controller::Pids), Ok(true));
}

#[test]
fn v2_internal_process_rule_makes_controller_unusable() {
    let state = V2DirState {
        has_processes: true,
        ..v2_state()
    };
    let reason = v2_controller_state(&state, Controller::Cpu).expect_err("busy cgroup");
    assert!(reason.contains("no-internal-processes"), "{reason}");
    let root = V2DirState {
        is_root: true,
        ..state
    };
    assert_eq!(
        v2_controller_state(&root, Controller::Cpu),
        Ok(true),
        "the root is exempt"
    );
}

#[test]
fn v2_undelegated_or_readonly_controller_is_unusable() {
    let undelegated = V2DirState {
        available: vec!["cpu".into()],
        ..v2_state()
    };
    let reason = v2_controller_state(&undelegated, Controller::Memory).expect_err("undelegated");
    assert!(reason.contains("cgroup.controllers"), "{reason}");
    let readonly = V2DirState {
        subtree_writable: false,
        ..v2_state()
    };
    assert!(v2_controller_state(&readonly, Controller::Memory).is_err());
}

// ---------------------------------------------------------------- validation (pure)

#[test]
fn names_are_validated() {
    for good in ["airlock-12-3", "a", "box_1.x"] {
        assert!(validate_name(good).is_ok(), "{good}");
    }
    let long = "a".repeat(256);
    for bad in [
        "",
        ".",
        "..",
        ".hidden",
        "a/b",
        "a b",
        "a\nb",
        "a\0b",
        long.as_str(),
    ] {
        assert!(
            matches!(validate_name(bad), Err(CgroupError::InvalidName { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn limits_are_validated_before_creation() {
    assert!(CgroupLimits::default().validate().is_ok());
    assert!(CgroupLimits::default().is_empty());
    let bad = [
        CgroupLimits {
            memory_bytes: Some(0),
            ..Default::default()
        },
        CgroupLimits {
            pids: Some(0),
            ..Default::default()
        },
        CgroupLimits {
            cpus: Some(0.0),
            ..Default::default()
        },
        CgroupLimits {
            cpus: Some(-1.0),
            ..Default::default()
        },
        CgroupLimits {
            cpus: Some(f64::NAN),
            ..Default::default()
        },
        CgroupLimits {
            cpus: Some(f64::INFINITY),
            ..Default::default()
        },
        CgroupLimits {
            cpus: Some(0.001),
            ..Default::default()
        },
        CgroupLimits {
            cpus: Some(2e6),
            ..Default::default()
        },
    ];
    for limits in bad {
        assert!(
            matches!(limits.validate(), Err(CgroupError::InvalidLimit { .. })),
            "{limits:?}"
        );
    }
}

#[test]
fn cpu_quota_is_cpus_times_period() {
    assert_eq!(cpu_quota_us(0.5).ok(), Some(50_000));
    assert_eq!(cpu_quota_us(2.0).ok(), Some(200_000));
    assert_eq!(cpu_quota_us(0.01).ok(), Some(1_000));
}

#[test]
fn error_messages_name_the_file_and_the_fix() {
    let err = CgroupError::WriteFile {
        path: PathBuf::from("/cg/box/pids.max"),
        value: "99".into(),
        fix: error::fix_hint(&std::io::Error::from_raw_os_error(libc::EACCES)),
        source: std::io::Error::from_raw_os_error(libc::EACCES),
    };
    let text = err.to_string();
    assert!(
        text.contains("/cg/box/pids.max") && text.contains("Delegate=yes"),
        "{text}"
    );
    assert!(std::error::Error::source(&err).is_some());
}

// ---------------------------------------------------------------- real kernel

/// The real-kernel tests need memory, pids and cpu cgroups (root on this machine): without them
/// they fail loudly rather than skip.
fn cgroups_usable() -> bool {
    let support = probe();
    assert!(
        support.is_complete(),
        "these tests need usable memory, pids and cpu cgroups (run as root): {:?}",
        support.reason
    );
    true
}

fn unique_name(label: &str) -> String {
    format!("airlock-test-{}-{label}", std::process::id())
}

/// Every directory where a box called `name` could exist.
fn candidate_dirs(name: &str) -> Vec<PathBuf> {
    let Ok(h) = hierarchy::discover() else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = Controller::ALL
        .iter()
        .filter_map(|c| h.site(*c).as_ref().ok().map(|s| s.parent.join(name)))
        .collect();
    if let Some((parent, _)) = &h.v2_parent {
        dirs.push(parent.join(name));
    }
    dirs
}

fn assert_no_leftovers(name: &str) {
    for dir in candidate_dirs(name) {
        assert!(!dir.exists(), "{} was left behind", dir.display());
    }
}

/// Kills (by pid) and reaps a child we spawned if the test did not.
struct ChildGuard(Child);

impl ChildGuard {
    fn pid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.0.id()).expect("pid fits pid_t")
    }

    fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Lets a `read x; ...` child continue.
    fn release(&mut self) {
        let stdin = self.0.stdin.as_mut().expect("piped stdin");
        stdin.write_all(b"go\n").expect("write to child");
        drop(self.0.stdin.take());
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_blocked(script: &str, args: &[&str]) -> ChildGuard {
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sh");
    ChildGuard(child)
}

fn file_in(cgroup: &BoxCgroup, file: &str) -> PathBuf {
    cgroup
        .paths()
        .into_iter()
        .map(|d| d.join(file))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no {file} in {:?}", cgroup.paths()))
}

fn read_trimmed(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .trim()
        .to_owned()
}

fn is_v1_root_host() -> bool {
    // SAFETY: geteuid() has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    root && parse::parse_mountinfo(&mountinfo)
        .iter()
        .any(|m| m.fs_type == CgroupFsType::V1 && m.has_option("memory"))
}

#[test]
fn probe_reports_v1_controllers_as_root_on_v1_host() {
    let support = probe();
    assert!(
        is_v1_root_host(),
        "this test needs root on a cgroup v1 host (as CI has); probe says {support:?}"
    );
    assert_eq!(support.version, Some(CgroupVersion::V1), "{support:?}");
    assert!(support.memory && support.pids && support.cpu, "{support:?}");
    assert_eq!(support.reason, None);
}

#[test]
fn probe_is_fast_and_leaves_nothing() {
    let mut fastest = Duration::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let _ = probe();
        fastest = fastest.min(start.elapsed());
    }
    assert!(fastest < Duration::from_millis(2), "probe took {fastest:?}");
    let Ok(h) = hierarchy::discover() else { return };
    for controller in Controller::ALL {
        let Ok(site) = h.site(controller) else {
            continue;
        };
        let leftovers: Vec<_> = std::fs::read_dir(&site.parent)
            .expect("read cgroup dir")
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("airlock-probe-{}-", std::process::id()))
            })
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn limits_are_written_and_destroy_kills_members_and_removes_dirs() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("limits");
    let limits = CgroupLimits {
        memory_bytes: Some(64 * MIB),
        pids: Some(16),
        cpus: Some(0.5),
    };
    let mut cgroup = BoxCgroup::create(&name, &limits).expect("create");
    let dirs = cgroup.paths();
    assert!(!dirs.is_empty());
    assert!(dirs.iter().all(|d| d.is_dir() && d.ends_with(&name)));

    match cgroup.version() {
        CgroupVersion::V1 => {
            assert_eq!(
                read_trimmed(&file_in(&cgroup, "memory.limit_in_bytes")),
                "67108864"
            );
            let memsw = file_in(&cgroup, "memory.limit_in_bytes")
                .with_file_name("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                assert_eq!(
                    read_trimmed(&memsw),
                    "67108864",
                    "swap must not bypass the cap"
                );
            }
            assert_eq!(
                read_trimmed(&file_in(&cgroup, "cpu.cfs_period_us")),
                "100000"
            );
            assert_eq!(read_trimmed(&file_in(&cgroup, "cpu.cfs_quota_us")), "50000");
        }
        CgroupVersion::V2 => {
            assert_eq!(read_trimmed(&file_in(&cgroup, "memory.max")), "67108864");
            assert_eq!(read_trimmed(&file_in(&cgroup, "cpu.max")), "50000 100000");
        }
    }
    assert_eq!(read_trimmed(&file_in(&cgroup, "pids.max")), "16");
    assert_eq!(cgroup.events(), CgroupEvents::default());
    assert!(cgroup.peak_memory().is_some());

    let mut child = ChildGuard(
        Command::new("sh")
            .args(["-c", "exec sleep 30"])
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = child.pid();
    cgroup.add_pid(pid).expect("add_pid");
    for dir in &dirs {
        let procs = parse::pid_list(&read_trimmed(&dir.join("cgroup.procs")));
        assert!(
            procs.contains(&pid),
            "{pid} not in {}: {procs:?}",
            dir.display()
        );
    }
    assert_eq!(cgroup.member_pids(), vec![pid]);

    cgroup.destroy().expect("destroy");
    let status = child
        .wait_timeout(Duration::from_secs(5))
        .expect("child died");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    for dir in &dirs {
        assert!(!dir.exists(), "{} still exists", dir.display());
    }
    assert!(cgroup.paths().is_empty());
    cgroup.destroy().expect("destroy is idempotent");
}

#[test]
fn memory_bomb_is_oom_killed_within_the_cap() {
    if !cgroups_usable() {
        return;
    }
    let python = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let Some(python) = python else {
        panic!("this test needs python3 (scripts/test.sh installs it)");
    };
    let limit = 64 * MIB;
    let name = unique_name("oom");
    let cgroup = BoxCgroup::create(
        &name,
        &CgroupLimits {
            memory_bytes: Some(limit),
            ..Default::default()
        },
    )
    .expect("create");
    let code = "b = bytearray(512 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\n";
    let mut child = spawn_blocked("read x; exec \"$0\" -c \"$1\"", &[python, code]);
    cgroup.add_pid(child.pid()).expect("add_pid");
    child.release();

    let status = child
        .wait_timeout(Duration::from_secs(60))
        .expect("memory bomb finished");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    let events = cgroup.events();
    assert!(events.oom_kills >= 1, "{events:?}");
    let peak = cgroup.peak_memory().expect("peak memory");
    assert!(peak <= limit + MIB, "peak {peak} exceeds the {limit} cap");
    assert!(peak > limit / 2, "peak {peak}: the bomb never grew");
}

#[test]
fn fork_bomb_hits_the_pids_cap_and_destroy_cleans_up() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("forks");
    let mut cgroup = BoxCgroup::create(
        &name,
        &CgroupLimits {
            pids: Some(16),
            ..Default::default()
        },
    )
    .expect("create");
    let mut child = spawn_blocked(
        "read x; i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done; wait",
        &[],
    );
    cgroup.add_pid(child.pid()).expect("add_pid");
    child.release();
    let _ = child.wait_timeout(Duration::from_secs(10));

    let events = cgroup.events();
    assert!(events.pids_max_hits >= 1, "{events:?}");
    let peak_file = file_in(&cgroup, "pids.max").with_file_name("pids.peak");
    if peak_file.exists() {
        let peak: u64 = read_trimmed(&peak_file).parse().expect("pids.peak");
        assert!(peak <= 16, "pids.peak {peak}");
    }
    let dirs = cgroup.paths();
    cgroup.destroy().expect("destroy");
    assert!(dirs.iter().all(|d| !d.exists()));
    assert_no_leftovers(&name);
}

#[test]
fn box_without_limits_still_tracks_and_kills() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("track");
    let mut cgroup = BoxCgroup::create(&name, &CgroupLimits::default()).expect("create");
    // One cgroup to track the box, and (cgroup v1) one in the freezer hierarchy to pause it.
    let expected = match cgroup.version() {
        CgroupVersion::V1 if cgroup.can_freeze().is_ok() => 2,
        _ => 1,
    };
    assert_eq!(cgroup.paths().len(), expected, "{:?}", cgroup.paths());
    assert_eq!(cgroup.peak_memory(), None);
    let mut child = spawn_blocked("read x; exec sleep 30", &[]);
    cgroup.add_pid(child.pid()).expect("add_pid");
    cgroup.kill_all();
    let status = child.wait_timeout(Duration::from_secs(5)).expect("killed");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    cgroup.destroy().expect("destroy");
    assert_no_leftovers(&name);
}

#[test]
fn an_unpausable_box_gets_no_freezer_and_says_why_it_cannot_pause() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("oneshot");
    let mut cgroup = BoxCgroup::create_unpausable(&name, &CgroupLimits::default()).expect("create");
    // Only the cgroup that tracks the box: no directory in the freezer hierarchy.
    assert_eq!(cgroup.paths().len(), 1, "{:?}", cgroup.paths());
    let why = cgroup.can_freeze().expect_err("no freezer");
    assert!(why.contains("one command"), "{why}");
    assert!(cgroup.freeze().is_err());
    let mut child = spawn_blocked("read x; exec sleep 30", &[]);
    cgroup.add_pid(child.pid()).expect("add_pid");
    cgroup.kill_all();
    let status = child.wait_timeout(Duration::from_secs(5)).expect("killed");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    cgroup.destroy().expect("destroy");
    assert_no_leftovers(&name);
}

#[test]
fn invalid_limits_are_refused_before_anything_is_created() {
    let name = unique_name("invalid");
    for limits in [
        CgroupLimits {
            cpus: Some(0.0),
            ..Default::default()
        },
        CgroupLimits {
            memory_bytes: Some(0),
            pids: Some(4),
            ..Default::default()
        },
    ] {
        let err = BoxCgroup::create(&name, &limits).expect_err("refused");
        assert!(matches!(err, CgroupError::InvalidLimit { .. }), "{err}");
        assert_no_leftovers(&name);
    }
    let err = BoxCgroup::create("../escape", &CgroupLimits::default()).expect_err("bad name");
    assert!(matches!(err, CgroupError::InvalidName { .. }), "{err}");
}

#[test]
fn kernel_rejection_rolls_back_every_directory() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("rollback");
    // The kernel caps pids.max at PID_MAX_LIMIT (4194304), so this fails after the memory and
    // pids directories were made and the memory limit was written.
    let limits = CgroupLimits {
        memory_bytes: Some(64 * MIB),
        pids: Some(10_000_000),
        cpus: Some(1.0),
    };
    let err = BoxCgroup::create(&name, &limits).expect_err("pids.max is out of range");
    match &err {
        CgroupError::WriteFile { path, value, .. } => {
            assert!(path.ends_with("pids.max"), "{err}");
            assert_eq!(value, "10000000");
        }
        other => panic!("unexpected error: {other}"),
    }
    assert_no_leftovers(&name);
}

#[test]
fn existing_cgroups_are_never_adopted_or_removed() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("twice");
    let limits = CgroupLimits {
        pids: Some(8),
        ..Default::default()
    };
    let mut first = BoxCgroup::create(&name, &limits).expect("first create");
    let err = BoxCgroup::create(&name, &limits).expect_err("second create");
    assert!(matches!(err, CgroupError::AlreadyExists { .. }), "{err}");
    assert!(
        first.paths().iter().all(|d| d.is_dir()),
        "the first box survived"
    );
    first.destroy().expect("destroy");
    assert_no_leftovers(&name);
}

#[test]
fn adding_a_dead_pid_fails_with_the_file_name() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("deadpid");
    let cgroup = BoxCgroup::create(
        &name,
        &CgroupLimits {
            pids: Some(8),
            ..Default::default()
        },
    )
    .expect("create");
    let mut child = ChildGuard(Command::new("true").spawn().expect("spawn true"));
    let pid = child.pid();
    child
        .wait_timeout(Duration::from_secs(5))
        .expect("true exits");
    let err = cgroup.add_pid(pid).expect_err("reaped pid");
    match err {
        CgroupError::WriteFile { path, .. } => assert!(path.ends_with("cgroup.procs")),
        other => panic!("unexpected error: {other}"),
    }
    drop(cgroup);
    assert_no_leftovers(&name);
}

#[test]
fn a_process_joins_its_box_by_itself_through_the_self_join_files() {
    if !cgroups_usable() {
        return;
    }
    let name = unique_name("self-join");
    let limits = CgroupLimits {
        memory_bytes: Some(64 * MIB),
        pids: Some(16),
        ..CgroupLimits::default()
    };
    let mut cgroup = BoxCgroup::create_unpausable(&name, &limits).expect("create");
    let dirs = cgroup.paths();
    let files = match cgroup.self_join_files().expect("open the join files") {
        Some(files) => files,
        None => {
            // v2: no per-thread file; the supervisor places the box with add_pid.
            assert_eq!(cgroup.version(), CgroupVersion::V2);
            cgroup.destroy().expect("destroy");
            return;
        }
    };
    assert_eq!(files.len(), dirs.len(), "one descriptor per hierarchy");
    let raw: Vec<libc::c_int> = files.iter().map(std::os::fd::AsRawFd::as_raw_fd).collect();
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    // SAFETY: the forked child only writes to descriptors opened before the fork.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || join_self(&raw));
    }
    let mut child = ChildGuard(cmd.spawn().expect("spawn sleep"));
    drop(files);
    let pid = child.pid();
    for dir in &dirs {
        let procs = parse::pid_list(&read_trimmed(&dir.join("cgroup.procs")));
        assert!(
            procs.contains(&pid),
            "{pid} did not join {}: {procs:?}",
            dir.display()
        );
    }
    assert_eq!(cgroup.member_pids(), vec![pid]);
    cgroup
        .destroy()
        .expect("destroy kills the member and removes the cgroup");
    let status = child
        .wait_timeout(Duration::from_secs(5))
        .expect("child died");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert_no_leftovers(&name);
}

#[test]
fn joining_through_a_bad_descriptor_fails_and_says_why() {
    let err = join_self(&[-1]).expect_err("-1 is no descriptor");
    assert_eq!(err.raw_os_error(), Some(libc::EBADF));
    join_self(&[]).expect("no cgroup to join is no error");
}

#[test]
fn a_stale_cgroup_with_the_next_name_is_skipped_never_adopted() {
    if !cgroups_usable() {
        return;
    }
    let prefix = "airlock-test-unique";
    let limits = CgroupLimits {
        pids: Some(16),
        ..CgroupLimits::default()
    };
    let mut first = BoxCgroup::create_unique(prefix, &limits, false).expect("first");
    let parents: Vec<PathBuf> = first
        .paths()
        .iter()
        .map(|p| p.parent().expect("a parent").to_path_buf())
        .collect();
    first.destroy().expect("destroy");
    // What a dead process with this PID left behind, under the name the next box would get.
    let next = box_cgroup::peek_unique_name(prefix);
    let stale: Vec<PathBuf> = parents.iter().map(|p| p.join(&next)).collect();
    for d in &stale {
        std::fs::create_dir(d).expect("plant a stale cgroup");
    }
    let second = BoxCgroup::create_unique(prefix, &limits, false);
    let paths = second.as_ref().map(|c| c.paths()).unwrap_or_default();
    if let Ok(mut c) = second {
        c.destroy().expect("destroy");
    }
    for d in &stale {
        std::fs::remove_dir(d).expect("remove the planted cgroup");
    }
    assert!(!paths.is_empty(), "the box got no cgroup");
    assert!(
        paths.iter().all(|p| !stale.contains(p)),
        "the stale directory was adopted: {paths:?}"
    );
}

/// A stale directory under the next name in the freezer hierarchy only (the others are free)
/// takes the name as a whole: the box gets the name after it, with a freezer, never a box that
/// silently cannot pause (what `airlock mcp`'s idle pause would then skip).
#[test]
fn a_stale_freezer_directory_alone_takes_the_name() {
    if !cgroups_usable() {
        return;
    }
    let prefix = "airlock-test-freezer";
    let limits = CgroupLimits {
        pids: Some(16),
        ..CgroupLimits::default()
    };
    let mut first = BoxCgroup::create_unique(prefix, &limits, true).expect("first");
    first.can_freeze().expect("a pausable box has a freezer");
    let freezer_parent = first
        .paths()
        .iter()
        .find(|p| p.to_string_lossy().contains("/freezer/"))
        .and_then(|p| p.parent().map(Path::to_path_buf));
    first.destroy().expect("destroy");
    // cgroup v2 has no freezer hierarchy of its own: nothing to plant there.
    let Some(freezer_parent) = freezer_parent else {
        return;
    };
    let stale = freezer_parent.join(box_cgroup::peek_unique_name(prefix));
    std::fs::create_dir(&stale).expect("plant a stale freezer cgroup");
    let second = BoxCgroup::create_unique(prefix, &limits, true);
    let result = second
        .as_ref()
        .map(|c| (c.paths(), c.can_freeze()))
        .map_err(ToString::to_string);
    if let Ok(mut c) = second {
        c.destroy().expect("destroy");
    }
    std::fs::remove_dir(&stale).expect("remove the planted cgroup");
    let (paths, freeze) = result.expect("the second box got cgroups");
    assert_eq!(freeze, Ok(()), "the second box cannot pause: {paths:?}");
    assert!(
        !paths.contains(&stale),
        "the stale directory was adopted: {paths:?}"
    );
}

// ---------------------------------------------------------------- waiting for killed members

/// A pidfd of `child` (a process this test started).
fn pidfd_of(child: &Child) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: pidfd_open on this test's own live child; a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    assert!(fd >= 0, "pidfd_open: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh descriptor the kernel just returned, owned by nothing else.
    unsafe { std::os::fd::OwnedFd::from_raw_fd(i32::try_from(fd).unwrap()) }
}

#[test]
fn waiting_for_killed_processes_ends_when_they_end_and_not_before() {
    let mut a = Command::new("sleep").arg("30").spawn().unwrap();
    let mut b = Command::new("sleep").arg("30").spawn().unwrap();
    let fds = [pidfd_of(&a), pidfd_of(&b)];
    // Both alive: the wait runs out, and says so.
    let began = Instant::now();
    assert!(!cgroupfs::wait_ended(
        &fds,
        Instant::now() + Duration::from_millis(100)
    ));
    assert!(began.elapsed() >= Duration::from_millis(100));
    // One ended: still not all.
    a.kill().unwrap();
    assert!(!cgroupfs::wait_ended(
        &fds,
        Instant::now() + Duration::from_millis(100)
    ));
    // Both ended (not yet reaped: an ended process counts as soon as it has exited).
    b.kill().unwrap();
    assert!(cgroupfs::wait_ended(
        &fds,
        Instant::now() + Duration::from_secs(10)
    ));
    assert!(a.wait().unwrap().signal() == Some(libc::SIGKILL));
    assert!(b.wait().unwrap().signal() == Some(libc::SIGKILL));
    // Nothing to wait for: done at once.
    assert!(cgroupfs::wait_ended(&[], Instant::now()));
}
