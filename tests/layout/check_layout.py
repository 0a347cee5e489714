#!/usr/bin/env python3
"""check_layout.py SRC — the source tree keeps the shape DESIGN.md gives it.

1. No include cycle among the project's own headers and sources
   (#include "..." resolved as the compiler would: next to the file, then
   from the top of the tree).
2. The folder arrows: kernels/ includes nothing from daemon/, pmd_glue/,
   tools/ or client/; pmd_glue/ nothing from daemon/; client/ only
   kernels/frame.h (and what it includes), kernels/cuda_drv.h and its own.
3. No C file or header in daemon/, pmd_glue/, kernels/ or client/ is longer
   than 800 lines unless its opening comment says why ("kept whole").
4. DESIGN.md stays true where a machine can tell: its folder table names
   every top-level folder of the tree and no other, and its metrics list
   names exactly the families daemon/metrics.c renders.
One line per problem; exit 1 if any.
"""
import os
import re
import sys

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
DIRS = ["daemon", "pmd_glue", "kernels", "client", "tools"]
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LIMIT = 800


def files():
    for d in DIRS:
        for root, _, names in os.walk(os.path.join(SRC, d)):
            for n in names:
                if n.endswith((".c", ".h", ".cu")):
                    yield os.path.relpath(os.path.join(root, n), SRC)


def resolve(f, inc):
    for base in (os.path.dirname(f), "", "client/include"):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(SRC, p)):
            return p
    return None  # generated (gi_build_config.h) or a system header


def design_problems():
    """DESIGN.md's folder table and metrics list against the tree and daemon/metrics.c."""
    out = []
    path = os.path.join(SRC, "DESIGN.md")
    if not os.path.isfile(path):
        return ["DESIGN.md: missing (the project's design document)"]
    design = open(path, encoding="utf-8").read()
    folders = set(re.findall(r"^\| `([a-z_]+)/` \|", design, re.M))
    tree = {d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d)) and not d.startswith(".")
            and not d.startswith("build") and d not in ("subprojects", "__pycache__")}
    for d in sorted(tree - folders):
        out.append(f"DESIGN.md: the folder table does not name {d}/")
    for d in sorted(folders - tree):
        out.append(f"DESIGN.md: the folder table names {d}/, which the tree does not have")
    m = re.search(r"^## Metrics\n(.*?)^## ", design, re.M | re.S)
    listed = set(re.findall(r"`gpuingest_([a-z_]+)`", m.group(1))) if m else set()
    code = open(os.path.join(SRC, "daemon", "metrics.c"), encoding="utf-8").read()
    rendered = set(re.findall(r'(?:mw_family\(&?w, |per_(?:port|queue|stream)\(&w, s, )"([a-z_]+)"', code))
    for f in sorted(rendered - listed):
        out.append(f"DESIGN.md: the metrics list lacks gpuingest_{f} (daemon/metrics.c renders it)")
    for f in sorted(listed - rendered):
        out.append(f"DESIGN.md: the metrics list names gpuingest_{f}, which daemon/metrics.c does not render")
    return out


def main():
    graph, problems = {}, []
    for f in sorted(files()):
        text = open(os.path.join(SRC, f), encoding="utf-8", errors="replace").read()
        graph[f] = [r for r in (resolve(f, i) for i in INC.findall(text)) if r]
        top = f.split("/")[0]
        for dep in graph[f]:
            d = dep.split("/")[0]
            if top == "kernels" and d in ("daemon", "pmd_glue", "tools", "client"):
                problems.append(f"{f}: kernels/ includes {dep} (kernels/ depends on nothing above it)")
            if top == "pmd_glue" and d == "daemon":
                problems.append(f"{f}: pmd_glue/ includes {dep} (arrows run daemon -> pmd_glue -> kernels)")
            if top == "client" and d not in ("client",) and dep not in (
                    "kernels/frame.h", "kernels/gi_hd.h", "kernels/cuda_drv.h"):
                problems.append(f"{f}: client/ includes {dep} (only kernels/frame.h and the CUDA loader)")
        if top != "tools" and f.endswith((".c", ".h", ".cu")):
            n = text.count("\n")
            head = text[:3000]
            if n > LIMIT and "kept whole" not in head:
                problems.append(f"{f}: {n} lines, over {LIMIT}, and its opening comment does not say why "
                                f"(\"kept whole ...\")")
    # cycles: depth-first search, reporting each cycle once
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, []):
            if state.get(m) == 1:
                cyc = stack[stack.index(m):] + [m]
                problems.append("include cycle: " + " -> ".join(cyc))
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    problems += design_problems()
    for p in problems:
        print("check_layout: " + p)
    if not problems:
        print(f"check_layout: {len(graph)} files, no include cycle, folder arrows kept, sizes within {LIMIT} lines "
              "or explained")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
