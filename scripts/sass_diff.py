#!/usr/bin/env python3
"""Which kernels' machine code differs between two scripts/sass.sh outputs.

Compares kernels.sass function by function, with what moves when any kernel is added or the
tree is compiled from another path normalized away: the global .L_x_N label numbers (renumbered
per function), the anonymous namespace's hash, section headers and each function's own name.
So a change that adds kernels but leaves the others' code alone reports them all "same".
Usage: scripts/sass_diff.py OLD_DIR NEW_DIR   (exit status 1 when a kernel present in both differs)
"""
import re
import sys

ANON = re.compile(r"_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+")
LABEL = re.compile(r"\.L_x_\d+")
HEADER = re.compile(r"\s*\.text\.(\S+):")


def functions(sass_dir):
    """{normalized mangled name: normalized body}."""
    bodies, name, lines = {}, None, []
    with open(f"{sass_dir}/kernels.sass") as f:
        for line in f:
            line = ANON.sub("ANON", line)
            m = HEADER.match(line)
            if m:
                if name:
                    bodies[name] = lines
                name, lines = m.group(1), []
            elif name and ".section" not in line and "//----" not in line:
                lines.append(line)
    if name:
        bodies[name] = lines
    out = {}
    for name, body in bodies.items():
        labels = {}
        text = "".join(LABEL.sub(lambda m: labels.setdefault(m.group(0), f"L{len(labels)}"), l) for l in body)
        out[name] = text.replace(name, "SELF")
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    old, new = functions(sys.argv[1]), functions(sys.argv[2])
    same = [k for k in old if k in new and old[k] == new[k]]
    groups = {"changed": [k for k in old if k in new and old[k] != new[k]],
              "only in old": [k for k in old if k not in new],
              "only in new": [k for k in new if k not in old]}
    print(f"same {len(same)}, " + ", ".join(f"{label} {len(names)}" for label, names in groups.items()))
    for label, names in groups.items():
        for k in names:
            print(f"{label}: {k}")
    return 1 if groups["changed"] else 0


if __name__ == "__main__":
    sys.exit(main())
