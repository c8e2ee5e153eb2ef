"""Builds the bubblewrap command that isolates like airlock does, for startup benchmarks.

Reads `airlock receipt --json` on stdin and prints one shell command: every namespace, no
capabilities, the same mounts airlock plans for this workspace (read-only system dirs and /etc
entries, the workspace (writable: bubblewrap 0.8 has no overlay option, so airlock's change
layer is extra work on airlock's side), protected paths, /proc, /dev, tmpfs /tmp and home), then the command
given as arguments (default /bin/true). bubblewrap has no seccomp filter, no Landlock and no
cgroup: those are airlock's extra layers.

Usage: airlock receipt --json | python3 benches/bwrap_peer.py [COMMAND...]
"""
import json
import shlex
import sys

doc = json.load(sys.stdin)
args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
        "--uid", "1000", "--gid", "1000", "--hostname", "airlock"]
for op in doc["rootfs"]["ops"]:
    kind = op["op"]
    if kind == "bind" and op["target"].startswith("/dev/"):
        continue  # bwrap --dev below makes /dev, its nodes and devpts
    if kind in ("bind", "copy"):
        flag = "--bind-try" if op.get("writable") else "--ro-bind-try"
        args += [flag, op["source"], op["target"]]
    elif kind == "symlink" and not op["link"].startswith("/dev/"):
        args += ["--symlink", op["target"], op["link"]]
    elif kind == "tmpfs" and op["target"] == "/dev":
        args += ["--dev", "/dev"]
    elif kind == "scratch" and op["target"] != "/dev/shm":
        args += ["--tmpfs", op["target"]]
    elif kind == "proc":
        args += ["--proc", op["target"]]
    elif kind == "overlay":
        # The workspace bound just before is the overlay's lower layer.
        i = max(j for j in range(len(args) - 2)
                if args[j] == "--ro-bind-try" and args[j + 2] == op["target"])
        args[i] = "--bind-try"
# bwrap needs the workspace after the tmpfs mounts it may sit under: move user binds last.
tail = []
i = 0
while i < len(args):
    if args[i] == "--bind-try":
        tail += args[i:i + 3]
        del args[i:i + 3]
    else:
        i += 1
args += tail
for cover in doc["rootfs"]["covers"]:
    args += ["--ro-bind-try", cover["path"], cover["path"]]
args += ["--chdir", doc["policy"]["cwd"]] + (sys.argv[1:] or ["/bin/true"])
print(shlex.join(args))
