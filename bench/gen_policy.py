#!/usr/bin/env python3
"""Write a policy with N [[fs]] rules to stdout (the benchmark input).

Rules are workspace-relative, nested a few levels deep, mostly missing
paths (a real policy names files that may not exist yet), with a mix of
rights, so lowering sees narrowing and widening as in real policies.
Deterministic: the same N gives the same bytes (it mirrors
benches/compile.rs's generator).
"""
import sys

RIGHTS = [
    "read = true",
    "read = true\nwrite = true",
    "read = true\nexecute = true",
    "create = true\nupdate = true",
]


def policy(n: int) -> str:
    out = ["version = 1", ""]
    for i in range(n):
        out.append("[[fs]]")
        out.append(f'path = "d{i % 97}/s{i % 13}/f{i}"')
        out.append(RIGHTS[i % len(RIGHTS)])
        out.append("")
    out.append("[[net]]\nhost = \"api.example.com\"\nscheme = \"https\"\n")
    out.append("[[env]]\nname = \"AWS_*\"\n")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(policy(int(sys.argv[1])))
