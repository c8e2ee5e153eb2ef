//! Pure parsers for the kernel's cgroup text formats: `/proc/<pid>/cgroup`,
//! `/proc/<pid>/mountinfo`, flat-keyed event files and single-value files.
//!
//! Nothing here touches the filesystem, so every function is unit-tested on sample text.

use std::path::{Path, PathBuf};

/// One line of `/proc/<pid>/cgroup`: `hierarchy-id:controllers:path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcCgroupEntry {
    /// 0 for the unified (v2) hierarchy.
    pub(crate) hierarchy_id: u32,
    /// Controllers bound to this hierarchy (`memory`, `cpu`, `name=systemd`, ...); empty on v2.
    pub(crate) controllers: Vec<String>,
    /// The cgroup path, relative to the reader's cgroup namespace root.
    pub(crate) path: String,
}

impl ProcCgroupEntry {
    pub(crate) fn has_controller(&self, name: &str) -> bool {
        self.controllers.iter().any(|c| c == name)
    }
}

/// Parses `/proc/<pid>/cgroup`. Malformed lines are skipped.
pub(crate) fn parse_proc_cgroup(text: &str) -> Vec<ProcCgroupEntry> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy_id = parts.next()?.trim().parse().ok()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            if !path.starts_with('/') {
                return None;
            }
            Some(ProcCgroupEntry {
                hierarchy_id,
                controllers: controllers
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned)
                    .collect(),
                path: path.to_owned(),
            })
        })
        .collect()
}

/// Which cgroup filesystem a mount is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CgroupFsType {
    /// `cgroup` (v1): one hierarchy per mount, controllers named in the super options.
    V1,
    /// `cgroup2`: the unified hierarchy.
    V2,
}

/// A cgroup mount found in `/proc/<pid>/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CgroupMount {
    pub(crate) fs_type: CgroupFsType,
    /// The cgroup inside the hierarchy that is visible at `mount_point` (field 4).
    pub(crate) root: String,
    pub(crate) mount_point: PathBuf,
    /// Super options (`rw,memory`, `rw,cpu,cpuacct`, `rw,nsdelegate`).
    pub(crate) super_options: Vec<String>,
}

impl CgroupMount {
    pub(crate) fn has_option(&self, name: &str) -> bool {
        self.super_options.iter().any(|o| o == name)
    }
}

/// Parses `/proc/<pid>/mountinfo` and keeps only cgroup and cgroup2 mounts, in mount order.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<CgroupMount> {
    text.lines().filter_map(parse_mountinfo_line).collect()
}

fn parse_mountinfo_line(line: &str) -> Option<CgroupMount> {
    let fields: Vec<&str> = line.split(' ').collect();
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    let separator = fields.iter().position(|f| *f == "-")?;
    if separator < 6 {
        return None;
    }
    let fs_type = match *fields.get(separator + 1)? {
        "cgroup" => CgroupFsType::V1,
        "cgroup2" => CgroupFsType::V2,
        _ => return None,
    };
    let super_options = fields
        .get(separator + 3)
        .map(|o| o.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    Some(CgroupMount {
        fs_type,
        root: unescape_octal(fields[3]),
        mount_point: PathBuf::from(unescape_octal(fields[4])),
        super_options,
    })
}

/// Decodes the `\ooo` escapes the kernel uses for space, tab, newline and backslash in mountinfo.
pub(crate) fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let digits = &bytes[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let value = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                if let Ok(byte) = u8::try_from(value) {
                    out.push(byte);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Maps a cgroup path (as in `/proc/self/cgroup`) to a directory, given the mount that exposes
/// cgroup `root` at `mount_point`. `None` if the path is not visible through that mount (outside
/// its root, or outside our cgroup namespace, shown by the kernel as `/..`).
pub(crate) fn cgroup_dir(mount_point: &Path, root: &str, cgroup_path: &str) -> Option<PathBuf> {
    let path_parts: Vec<&str> = cgroup_path.split('/').filter(|p| !p.is_empty()).collect();
    let root_parts: Vec<&str> = root.split('/').filter(|p| !p.is_empty()).collect();
    if path_parts
        .iter()
        .chain(&root_parts)
        .any(|p| *p == ".." || *p == ".")
    {
        return None;
    }
    if !path_parts.starts_with(&root_parts) {
        return None;
    }
    let mut dir = mount_point.to_path_buf();
    for part in &path_parts[root_parts.len()..] {
        dir.push(part);
    }
    Some(dir)
}

/// True if the cgroup path `path` is `ancestor` or lies below it.
pub(crate) fn path_is_within(path: &str, ancestor: &str) -> bool {
    let parts = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    parts(path).starts_with(&parts(ancestor))
}

/// The cgroup path of child `name` of the cgroup at `parent`.
pub(crate) fn child_path(parent: &str, name: &str) -> String {
    format!("{}/{name}", parent.trim_end_matches('/'))
}

/// Reads `key N` from a flat-keyed file (`memory.events`, `pids.events`, `memory.oom_control`).
pub(crate) fn flat_keyed_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        if words.next()? != key {
            return None;
        }
        words.next()?.parse().ok()
    })
}

/// Parses a file holding one unsigned number (`memory.peak`, `memory.max_usage_in_bytes`).
pub(crate) fn single_value(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// Parses a space-separated controller list (`cgroup.controllers`, `cgroup.subtree_control`).
pub(crate) fn controller_list(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// Parses `cgroup.procs`: one pid per line.
pub(crate) fn pid_list(text: &str) -> Vec<libc::pid_t> {
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

/// User + system time of a process and of the children it reaped, in clock ticks, from its
/// `/proc/<pid>/stat` line (fields 14–17). The command name (field 2) may hold spaces and
/// parentheses, so fields are counted after its last `)`.
pub(crate) fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so utime (14) is the 12th word here.
    let words: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| words.get(n - 3)?.parse::<u64>().ok();
    Some(field(14)? + field(15)? + field(16)? + field(17)?)
}
