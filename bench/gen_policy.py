#!/usr/bin/env python3
"""Benchmark inputs: a policy of N rules in one of the shapes users write.

    bench/gen_policy.py N                 the `missing` shape, to stdout
    bench/gen_policy.py SHAPE N DIR       a workspace and policy in DIR

With DIR, the generator makes DIR/ws (the workspace, with every directory
the shape says exists), the policy files, and whatever else the shape
needs (approvals.json, bin/ with the commands), then prints the arguments
to append to `sbx compile` or `sbx check` on one line. For `commands`,
put DIR/bin first on PATH (the commands resolve through PATH).

Shapes (N counts the shape's rules):
  missing     workspace-relative paths that mostly do not exist
  siblings    existing sibling directories d/00000..., half ro, half rw
  nested      existing directories nested in a ten-way tree, rights
              alternating with depth
  carveouts   ten writable roots, each with read-only and execute-only
              rules under it, and writable ones under those (names share
              prefixes: c/0/1, c/0/10, c/0/100)
  globs       existing directories, and as many sensitive_paths globs
              anchored below them, at home or absolute
  external    workspace symlinks to directories outside it, external =
              true, nine in ten approved
  env         [[env]] names and globs, some not forwarded
  commands    [commands.NAME] with argument prefixes and envs
  net         [[net]] hosts, wildcards, ports, binds and deny rules
  layered     four layers merged left to right: siblings, nested with
              [[net]], carve-outs with [[env]], and a merge table

Deterministic: the same shape and N give the same bytes.
"""
import json
import os
import sys

SHAPES = [
    "missing", "siblings", "nested", "carveouts", "globs", "external",
    "env", "commands", "net", "layered",
]

RIGHTS = [
    "read = true",
    "read = true\nwrite = true",
    "read = true\nexecute = true",
    "create = true\nupdate = true",
]
RO = "read = true"
RW = "read = true\nwrite = true"
# Execute only: the narrowest rule (a rule must grant something).
NARROW = "read = false\nexecute = true"


def fs(path, rights, extra=""):
    return f'[[fs]]\npath = "{path}"\n{rights}\n{extra}'


def missing(n):
    out = [fs(f"d{i % 97}/s{i % 13}/f{i}", RIGHTS[i % len(RIGHTS)]) for i in range(n)]
    out.append('[[net]]\nhost = "api.example.com"\nscheme = "https"\n')
    out.append('[[env]]\nname = "AWS_*"\n')
    return out


def siblings(n, mk):
    out = []
    for i in range(n):
        p = f"d/{i:05d}"
        mk(p)
        out.append(fs(p, RO if i % 2 else RW))
    return out


def tree_path(k):
    """Node k of a ten-way tree in breadth-first order, as t/3/0/7."""
    parts = []
    k += 1
    while k > 0:
        k -= 1
        parts.append(str(k % 10))
        k //= 10
    return "t/" + "/".join(reversed(parts))


def nested(n, mk):
    out = []
    for i in range(n):
        p = tree_path(i)
        mk(p)
        depth = p.count("/")
        out.append(fs(p, [RW, RO, RIGHTS[2]][depth % 3]))
    return out


def carveouts(n, mk):
    roots = 10
    out = []
    for r in range(roots):
        mk(f"c/{r}")
        out.append(fs(f"c/{r}", RW))
    # Under each root: read-only carve-outs, every seventh a deny, and every
    # fifth one's `w` child writable again.
    i = 0
    while len(out) < n:
        r, j = i % roots, i // roots + 1
        p = f"c/{r}/{j}"
        mk(p)
        out.append(fs(p, NARROW if j % 7 == 0 else RO))
        if j % 5 == 0 and len(out) < n:
            mk(p + "/w")
            out.append(fs(p + "/w", RW))
        i += 1
    return out


def globs(n, mk):
    half = n // 2
    out = []
    for i in range(n - half):
        p = f"g/{i:05d}"
        mk(p)
        out.append(fs(p, RO if i % 2 else RW))
    sensitive = []
    for i in range(half):
        pats = [f"~/.tool{i}/", f"g/{i:05d}/*.key", f"g/{i:05d}/s/**/.token", f"/opt/t{i}/*.pem"]
        sensitive.append(pats[i % len(pats)])
    head = ["sensitive_paths = " + json.dumps(sensitive), ""]
    return head + out


def external(n, mk, link, approve):
    out = []
    for i in range(n):
        p = f"ext/l{i:05d}"
        link(p, f"outside/{i:05d}")
        if i % 10:
            approve(p, f"outside/{i:05d}")
        out.append(fs(p, RO if i % 2 else RW, "external = true\n"))
    return out


def env(n):
    out = [fs(".", RW)]
    for i in range(n):
        if i % 5 == 0:
            out.append(f'[[env]]\nname = "P{i}_*"\n')
        elif i % 7 == 0:
            out.append(f'[[env]]\nname = "VAR_{i}"\nread = false\n')
        else:
            out.append(f'[[env]]\nname = "VAR_{i}"\n')
    return out


def commands(n, exe):
    out = [fs(".", RW), '[[env]]\nname = "TOKEN_*"\n']
    for i in range(n):
        name = f"c{i:05d}"
        exe(name)
        body = f"[commands.{name}]\n"
        if i % 3 == 1:
            body += f'args = [["build", "**"], ["test", "--lib"], ["run{i}"]]\n'
        if i % 4 == 2:
            body += f'envs = ["TOKEN_{i}"]\n'
        out.append(body)
    return out


def net(n):
    out = [fs(".", RW)]
    for i in range(n):
        m = i % 6
        if m == 0:
            out.append(f'[[net]]\nhost = "h{i}.example.com"\nscheme = "https"\n')
        elif m == 1:
            out.append(f'[[net]]\nhost = "*.d{i}.example"\nport = {1024 + i % 60000}\n')
        elif m == 2:
            out.append(f'[[net]]\nhost = "10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"\nport = 22\n')
        elif m == 3:
            out.append(f'[[net]]\nport = {2000 + i % 60000}\nbind = true\n')
        elif m == 4:
            out.append(f'[[net]]\nhost = "api{i}.example.org"\nport = 8443\npath_prefix = "/v{i}/"\n')
        else:
            out.append(f'[[net]]\nhost = "bad{i}.example.net"\nallow = false\n')
    return out


def layered(n, mk):
    q = n // 4
    base = ["version = 1", ""] + siblings(q, mk)
    team = nested(q, mk) + net(max(q // 10, 1))[1:]
    local = carveouts(q, mk) + env(max(q // 10, 1))[1:]
    # The last layer replaces nothing but writes fs as a merge table.
    last = ["[fs]", 'strategy = "dedup"']
    for i in range(n - 3 * q):
        p = f"d/{i:05d}"  # the first layer's paths again: dedup merges them
        mk(p)
        last.append(f'[[fs.value]]\npath = "{p}"\n{RO}\n')
    return [base, team, local, last]


def make(shape, n, d):
    ws = os.path.join(d, "ws")
    os.makedirs(ws, exist_ok=True)
    approvals = []

    def mk(p):
        os.makedirs(os.path.join(ws, p), exist_ok=True)

    def link(p, target):
        t = os.path.join(d, target)
        os.makedirs(t, exist_ok=True)
        full = os.path.join(ws, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if not os.path.islink(full):
            os.symlink(t, full)

    def approve(p, target):
        approvals.append({
            "workspace": os.path.realpath(ws),
            "rule_path": p,
            "canonical_target": os.path.realpath(os.path.join(d, target)),
        })

    def exe(name):
        b = os.path.join(d, "bin")
        os.makedirs(b, exist_ok=True)
        f = os.path.join(b, name)
        if not os.path.exists(f):
            with open(f, "w") as h:
                h.write("#!/bin/sh\n")
            os.chmod(f, 0o755)

    if shape == "missing":
        layers = [missing(n)]
    elif shape == "siblings":
        layers = [siblings(n, mk)]
    elif shape == "nested":
        layers = [nested(n, mk)]
    elif shape == "carveouts":
        layers = [carveouts(n, mk)]
    elif shape == "globs":
        layers = [globs(n, mk)]
    elif shape == "external":
        layers = [external(n, mk, link, approve)]
    elif shape == "env":
        layers = [env(n)]
    elif shape == "commands":
        layers = [commands(n, exe)]
    elif shape == "net":
        layers = [net(n)]
    elif shape == "layered":
        layers = layered(n, mk)
    else:
        sys.exit(f"unknown shape {shape}; shapes: {' '.join(SHAPES)}")

    args = []
    for k, body in enumerate(layers):
        if k == 0 and body[:1] != ["version = 1"]:
            body = ["version = 1", ""] + body
        f = os.path.join(d, f"p{k}.toml")
        with open(f, "w") as h:
            h.write("\n".join(body) + "\n")
        args.append(f)
    args += ["--workspace", ws, "--home", os.path.join(d, "home")]
    if shape == "external":
        a = os.path.join(d, "approvals.json")
        with open(a, "w") as h:
            json.dump({"mounts": approvals}, h, indent=1)
        args += ["--approvals", a]
    print(" ".join(args))


def main(argv):
    if len(argv) == 2:
        sys.stdout.write("\n".join(["version = 1", ""] + missing(int(argv[1]))))
    elif len(argv) == 4 and argv[1] in SHAPES:
        make(argv[1], int(argv[2]), argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
