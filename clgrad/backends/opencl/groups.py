"""Program groups: kernels from different templates built as ONE program, so a process pays the compiler's
per-program cost once for a whole training step instead of once per kernel.

PoCL's front end costs ~0.1-0.4 s per program whatever its size and re-loading a program from its cache ~23 ms,
while code is generated per kernel on first launch; so on PoCL one program of 30 kernels costs far less to build
than 30 programs of one, and a kernel that is never launched costs only its share of the front end. The groups
are a shipped, static table (``group_table.py``, written by ``python bench/startup.py --record-groups``): each
lists the (template, kernel name, signature) a known workload requests. A signature is the render parameters
minus what the op tables supply (``programs.render_params``): an elementwise member names its op, not its
bundle's kernels and C expressions, so adding or changing an op leaves the table valid. When
``programs.get_kernel`` is asked for a member, every member of its group is rendered into one source and built;
the others are then looked up by name. A stale table entry (a launcher's parameters changed) is simply never
requested: that kernel is built alone, as before.

Members are rendered from templates that each define their own macros (``#define ACC``), helpers (``inline``
functions) and kernels, so ``combine`` wraps member ``i``: ``#define x x__g<i>`` before it for every name it
defines at file scope (kernels included) and ``#undef`` after it for those and for its own macros. Pragmas change
the compiler's state for the rest of the file (``FP_CONTRACT OFF``, ``cl_khr_fp64 : enable``), so members are
only combined with members carrying the same pragma lines: one program per pragma set.
"""
from __future__ import annotations

import ast
import re

from . import group_table

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)", re.M)
_PRAGMA = re.compile(r"^[ \t]*#[ \t]*pragma[^\n]*", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_KEYWORDS = {"struct", "union", "enum", "typedef"}


def _strip_attributes(text: str) -> str:
    """``text`` without ``__attribute__((...))`` (balanced parentheses), so the first '(' left opens a parameter list."""
    while True:
        at = text.find("__attribute__")
        if at < 0:
            return text
        i = text.find("(", at)
        depth, j = 0, i
        while j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        text = text[:at] + " " + text[j:]


def _declared(header: str) -> str | None:
    """The name a file-scope declaration or definition head declares: a function's (the identifier before its
    parameter list), a tag's (``struct s``) or a variable's or typedef's (the last identifier before ``=`` or ``[``)."""
    header = _strip_attributes(header)
    if "(" in header.split("=")[0]:
        names = _IDENT.findall(header[:header.index("(")])
        return names[-1] if names else None
    tag = re.search(r"\b(?:struct|union|enum)\s+(\w+)\s*$", header)
    if tag:
        return tag.group(1)
    names = [n for n in _IDENT.findall(re.split(r"[=\[]", header)[0]) if n not in _KEYWORDS]
    return names[-1] if names else None


def file_scope_names(source: str) -> tuple[list, list]:
    """(every name ``source`` defines at file scope, the kernels among them), in source order."""
    text = _DIRECTIVE.sub(" ", _COMMENT.sub(" ", source))
    names, kernels = [], []
    depth, start = 0, 0
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                head = text[start:i]
                name = _declared(head)
                if name and name not in names:
                    names.append(name)
                    if re.search(r"\b(?:__kernel|kernel)\b", head):
                        kernels.append(name)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif c == ";" and depth == 0:
            # a declaration, or the end of a struct/typedef whose body was skipped: name the declarator after it
            decl = text[start:i]
            name = _declared(decl.rsplit("}", 1)[-1]) if decl.strip() else None
            if name and name not in names:
                names.append(name)
            start = i + 1
    return names, kernels


def pragmas(source: str) -> tuple:
    """The pragma lines of ``source``, normalized: members are combined only with members having the same.
    Enabling cl_khr_fp64 changes nothing for code that uses no double, so it does not split a group (the float
    elementwise bundles enable it for pow's double-arithmetic kernel)."""
    found = {" ".join(p.split()) for p in _PRAGMA.findall(source)}
    return tuple(sorted(found - {"#pragma OPENCL EXTENSION cl_khr_fp64 : enable"}))


def combine(sources: list) -> tuple[str, list]:
    """One program source from ``sources`` (all with the same pragmas), and for each source a dict from each of
    its kernel names to that kernel's name in the combined program."""
    parts, renames = [], []
    for i, source in enumerate(sources):
        names, kernels = file_scope_names(source)
        macros = list(dict.fromkeys(_DEFINE.findall(source)))
        suffix = f"__g{i}"
        parts.append(f"// ---- group member {i}\n" + "".join(f"#define {n} {n}{suffix}\n" for n in names))
        parts.append(source if source.endswith("\n") else source + "\n")
        parts.append("".join(f"#undef {n}\n" for n in names + [m for m in macros if m not in names]))
        renames.append({k: k + suffix for k in kernels})
    return "".join(parts), renames


_index: dict | None = None  # member -> the groups listing it (table order), built from the table on first use


def groups_of(member: tuple) -> tuple:
    """The groups listing ``member`` = (template, kernel name, sorted render parameters), in table order: a kernel
    two workloads share (matmul, the optimizer step) is in each one's group."""
    global _index
    if _index is None:
        _index = {}
        for group, members in group_table.GROUPS.items():
            for m in members:  # a group lists each member once
                _index[m] = _index.get(m, ()) + (group,)
    return _index.get(member, ())


def members(group: str) -> tuple:
    return group_table.GROUPS[group]


def table_source(groups: dict) -> str:
    """The text of group_table.py for ``groups`` (name -> members), one member a line; members whose parameters
    are not plain literals are left out (they could not be written back)."""
    lines = ['"""Program groups (see groups.py). Generated by `python bench/startup.py --record-groups`: do not edit."""',
             "# ruff: noqa: E501", "", "GROUPS = {"]
    for group, ms in groups.items():
        lines.append(f"    {group!r}: (")
        for m in ms:
            text = repr(m)
            try:
                if ast.literal_eval(text) != m:
                    continue
            except (ValueError, SyntaxError):
                continue
            lines.append(f"        {text},")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"
