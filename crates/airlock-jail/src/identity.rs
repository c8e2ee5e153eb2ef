//! The synthesized identity files of an isolated box.

use airlock_policy::{INSIDE_GID, INSIDE_HOME, INSIDE_UID, INSIDE_USER};

/// The box's host name.
pub const HOSTNAME: &str = "airlock";

/// The command line and name of the box's init (pid 1), as the box's processes see it in
/// /proc/1/cmdline and /proc/1/comm: nothing of airlock's own command line.
pub const INIT_NAME: &str = "airlock-init";

/// `/etc/passwd` inside the box: root, the box user and nobody; nothing of the host's users.
pub fn passwd() -> String {
    format!(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n\
         {INSIDE_USER}:x:{INSIDE_UID}:{INSIDE_GID}:{INSIDE_USER}:{INSIDE_HOME}:/bin/bash\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
}

/// `/etc/group` inside the box.
pub fn group() -> String {
    format!("root:x:0:\n{INSIDE_USER}:x:{INSIDE_GID}:\nnogroup:x:65534:\n")
}

/// `/etc/hosts` inside the box: loopback names only.
pub fn hosts() -> String {
    format!("127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n")
}
