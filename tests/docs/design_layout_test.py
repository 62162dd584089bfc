#!/usr/bin/env python3
"""docs/DESIGN.md's layout table kept true: every `#include "..."` of the project's own headers in
base/, kernels/, collectives/, optim/, offload/ and runtime/ must be allowed by the "may include"
column of the including file's row.

A row's cell is a comma-separated list; parentheses are comments. Each entry is one of:
  nothing            - only its own folder
  everything         - any folder
  everything above   - every folder of the rows above it in the table
  NAME               - a folder of the table by its last component (base, kernels, zero, model, ...)
  `path/to/file.h`   - that one header
A folder includes its own files and its sub-folders' (kernels/cpu/ is kernels/), and what the
folders it may include may include (layers: monitor -> engine -> zero -> base). The check prints
every include that breaks the table (file:line, what it includes, the row's cell) and exits 1.

    design_layout_test.py REPO_ROOT
"""
import os
import re
import sys

CODE_DIRS = ("base", "kernels", "collectives", "optim", "offload", "runtime")
SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")


def read_table(design_path):
    """The layout table's rows in order: (folder, allowed entries as written)."""
    rows = []
    in_table = False
    with open(design_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## Layout"):
                in_table = True
                continue
            if in_table and line.startswith("## "):
                break
            if not in_table or not line.startswith("| `"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 3:
                continue
            folders = re.findall(r"`([^`]+)/`", cells[0])
            if len(folders) != 1:
                continue  # the configs/tests/bench/scripts row: no code layer
            rows.append((folders[0], cells[-1]))
    return rows


def drop_parentheses(text):
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def allowed_sets(rows, design_path):
    """Per folder: (allowed folders, allowed single files); None for 'everything'."""
    by_short = {}
    for folder, _ in rows:
        by_short.setdefault(folder.rsplit("/", 1)[-1], folder)
    result = {}
    problems = []
    for i, (folder, cell) in enumerate(rows):
        folders, files, everything = {folder}, set(), False
        for entry in drop_parentheses(cell).replace(" and ", ", ").split(","):
            entry = entry.strip()
            if not entry or entry == "—":
                continue
            if entry == "nothing":
                continue
            if entry == "everything":
                everything = True
            elif entry == "everything above":
                folders.update(f for f, _ in rows[:i])
            elif entry.startswith("`") and entry.endswith("`"):
                files.add(entry.strip("`"))
            elif entry in by_short:
                folders.add(by_short[entry])
            else:
                problems.append(f"{design_path}: row `{folder}/`: cannot read '{entry}' in its "
                                "'may include' cell (use a folder's name, `a/file.h`, nothing, "
                                "everything or everything above)")
        result[folder] = None if everything else (folders, files)
    # Layers: what a folder may include, it may also include what those may include.
    changed = True
    while changed:
        changed = False
        for folder, rule in result.items():
            if rule is None:
                continue
            folders, files = rule
            for other in list(folders):
                sub = result.get(other)
                if other == folder or sub is None:
                    continue
                before = (len(folders), len(files))
                folders |= sub[0]
                files |= sub[1]
                changed |= (len(folders), len(files)) != before
    return result, problems


def owner(path, folders):
    """The table's folder that holds path: the longest folder that is a prefix."""
    best = None
    for f in folders:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    design = os.path.join(root, "docs", "DESIGN.md")
    rows = read_table(design)
    if not rows:
        print(f"{design}: no layout table found (a '## Layout' section with rows '| `folder/` |')")
        return 1
    allowed, problems = allowed_sets(rows, design)
    folders = list(allowed)
    include_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    checked = 0
    for top in CODE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                src = owner(path, folders)
                if src is None:
                    problems.append(f"{path}: its folder has no row in {design}'s layout table")
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = include_re.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if "/" not in target or target.split("/", 1)[0] not in CODE_DIRS:
                            continue  # a sibling, generated or third-party header
                        checked += 1
                        rule = allowed[src]
                        if rule is None:
                            continue
                        ok_folders, ok_files = rule
                        dst = owner(target, folders)
                        if target in ok_files or (dst is not None and dst in ok_folders):
                            continue
                        cell = dict(rows)[src]
                        problems.append(f"{path}:{lineno}: includes {target} ({dst or 'no row'}/), "
                                        f"which `{src}/` may not include (its cell: {cell})")
    for p in problems:
        print(p)
    print(f"design_layout: {len(rows)} rows, {checked} includes checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
