"""Which CUDA kernels two builds compiled differently: registers, stack, spills, shared memory, and (for the
kernels named) the SASS instructions, by opcode.

A bisect names the first slower build; when its neighbours differ in a kernel, this says, without a GPU,
what the compiler made of the change: a kernel that now needs more registers runs fewer warps per SM,
one that spills reads local memory. It reads the cubins of each build's ``libggml-cuda.so`` with
``cuobjdump`` (``--cuobjdump``, ``$CUOBJDUMP`` or PATH; the toolkit's, or the wheel ``nvidia-cuda-cuobjdump``)
and demangles with ``c++filt``. A reading of the code, not a measurement.

    python experiments/bisect/kernel_resources.py /work/hostbuild/11368.0.0/build/bin \\
        /work/hostbuild/11378.0.0/build/bin --match 'mul_mat_vec_q<\\(ggml_type\\)3, 1,' --sass 'mul_mat_vec_q<\\(ggml_type\\)3, 1, true, false, false>'
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

#: Resources that change what a kernel can run at once or what it reads; the parameter bank (CONSTANT[0]) is
#: counted apart: a struct passed by value changes it in every kernel that takes it.
SHOWN = ("REG", "STACK", "LOCAL", "SHARED")
FUNCTION = re.compile(r"^\s*Function (\S+):\s*$")
RESOURCE = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
#: Names of kernels in anonymous namespaces carry a hash of the translation unit, new in every build.
INTERNAL = re.compile(r"_INTERNAL_[0-9a-f]+_")
SASS_FUNCTION = re.compile(r"^\s*Function : (\S+)\s*$")
#: A kernel argument read from the parameter bank: its offset moves when an earlier argument grows.
PARAMETER = re.compile(r"c\[0x0\]\[0x[0-9a-f]+\]")
#: The hex encoding cuobjdump prints beside each instruction (it holds the offsets too).
ENCODING = re.compile(r"/\* 0x[0-9a-f]+ \*/")
OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)")


def library(path: Path) -> Path:
    """``path`` itself, or the ``libggml-cuda.so*`` inside the folder it names."""
    if path.is_file():
        return path
    found = sorted(path.glob("libggml-cuda.so*")) if path.is_dir() else []
    if not found:
        sys.exit(f"{path}: no libggml-cuda.so here (a CUDA build's bin/ folder, or the library itself)")
    return found[0]


def cuobjdump(tool: str | None) -> str:
    found = tool or os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if not found:
        sys.exit(
            "cuobjdump not found: pass --cuobjdump, set $CUOBJDUMP, or put the CUDA toolkit's bin on PATH "
            "(pip download --no-deps nvidia-cuda-cuobjdump has it under nvidia/cu13/bin)"
        )
    return found


def resources(tool: str, lib: Path) -> dict[str, dict[str, int]]:
    """Kernel name (mangled, translation-unit hash removed) → its resources, for every cubin in ``lib``."""
    out = subprocess.run([tool, "-res-usage", str(lib)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{tool} -res-usage {lib}: exit {out.returncode}: {out.stderr.strip()[-500:]}")
    kernels: dict[str, dict[str, int]] = {}
    name = None
    for line in out.stdout.splitlines():
        m = FUNCTION.match(line)
        if m:
            name = INTERNAL.sub("_INTERNAL_", m.group(1))
            continue
        if name is not None and "REG:" in line:
            kernels[name] = {k: int(v) for k, v in RESOURCE.findall(line)}
            name = None
    if not kernels:
        sys.exit(f"{lib}: cuobjdump listed no kernels (not a CUDA build?)")
    return kernels


def demangle(names: list[str]) -> dict[str, str]:
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return dict(zip(names, out.stdout.splitlines(), strict=True))


def short(demangled: str) -> str:
    """The kernel and its template arguments, without the parameter list."""
    return demangled.split(">(")[0] + ">" if ">(" in demangled else demangled.split("(")[0]


def opcodes(tool: str, lib: Path, mangled: str) -> Counter[str]:
    out = subprocess.run([tool, "-sass", "-fun", mangled, str(lib)], capture_output=True, text=True, check=True)
    return Counter(m.group(1) for m in OPCODE.finditer(out.stdout))


def sass_digests(tool: str, lib: Path) -> dict[str, tuple[str, str]]:
    """Kernel name → digests of its whole SASS, as is and with parameter-bank offsets blanked (translation-unit
    hashes removed from both): minutes for a full build."""
    out = subprocess.run([tool, "-sass", str(lib)], capture_output=True, text=True, check=True)
    digests: dict[str, tuple[str, str]] = {}
    name: str | None = None
    body: list[str] = []
    for line in [*out.stdout.splitlines(), "Function : <end>"]:
        m = SASS_FUNCTION.match(line)
        if m:
            if name is not None:
                text = "\n".join(body)
                digests[name] = (_sha(text), _sha(PARAMETER.sub("c[0x0][_]", ENCODING.sub("", text))))
            name, body = INTERNAL.sub("_INTERNAL_", m.group(1)), []
        elif name is not None:
            body.append(INTERNAL.sub("_INTERNAL_", line))
    return digests


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the earlier build: its bin/ folder or libggml-cuda.so")
    parser.add_argument("after", type=Path, help="the later build")
    parser.add_argument("--match", default="", help="only kernels whose demangled name matches this regex")
    parser.add_argument("--sass", help="also count the SASS instructions, by opcode, of the kernels matching this")
    parser.add_argument("--all-sass", action="store_true", help="compare every kernel's whole SASS (minutes)")
    parser.add_argument("--cuobjdump")
    args = parser.parse_args()
    tool = cuobjdump(args.cuobjdump)
    libs = library(args.before), library(args.after)
    a, b = (resources(tool, lib) for lib in libs)
    names = demangle(sorted(set(a) | set(b)))
    pick = re.compile(args.match)
    chosen = [n for n in sorted(names, key=lambda n: short(names[n])) if pick.search(names[n])]
    print(f"before: {libs[0]} ({len(a)} kernels)\nafter:  {libs[1]} ({len(b)} kernels)")
    only_param = sum(1 for n in a if n in b and a[n] != b[n] and all(a[n].get(k) == b[n].get(k) for k in SHOWN))
    print(f"kernels whose parameter bank alone changed (CONSTANT[0]): {only_param}")
    changed = [n for n in chosen if n in a and n in b and any(a[n].get(k) != b[n].get(k) for k in SHOWN)]
    added = [n for n in chosen if n not in a]
    removed = [n for n in chosen if n not in b]
    same = len([n for n in chosen if n in a and n in b]) - len(changed)
    print(f"matching {args.match!r}: {len(changed)} changed, {same} unchanged in {'/'.join(SHOWN)}; ", end="")
    print(f"{len(added)} new, {len(removed)} gone")
    for n in changed:
        moved = ", ".join(f"{k} {a[n].get(k, 0)}→{b[n].get(k, 0)}" for k in SHOWN if a[n].get(k) != b[n].get(k))
        print(
            f"  changed  {short(names[n])}: {moved} (CONSTANT[0] {a[n].get('CONSTANT[0]')}→{b[n].get('CONSTANT[0]')})"
        )
    for label, group in (("new", added), ("gone", removed)):
        for n in group:
            print(f"  {label:7s}  {short(names[n])}")
    if args.all_sass:
        da, db = (sass_digests(tool, lib) for lib in libs)
        both = [n for n in chosen if n in da and n in db]
        differ = [n for n in both if da[n][0] != db[n][0]]
        beyond = [n for n in differ if da[n][1] != db[n][1]]
        print(
            f"SASS of {len(both)} kernels in both: {len(differ)} differ ({len(differ) - len(beyond)} of them only in "
            f"parameter-bank offsets), {len(both) - len(differ)} identical"
        )
        for n in beyond:
            print(f"  SASS differs beyond offsets  {short(names[n])}")
    if args.sass:
        pattern = re.compile(args.sass)
        for n in (n for n in chosen if n in a and n in b and pattern.search(names[n])):
            before, after = opcodes(tool, libs[0], n), opcodes(tool, libs[1], n)
            nops = before["NOP"], after["NOP"]
            total = sum(before.values()) - nops[0], sum(after.values()) - nops[1]
            print(f"SASS {short(names[n])}: {total[0]} → {total[1]} instructions (NOP padding left out)")
            diffs = {op: after[op] - before[op] for op in set(before) | set(after) if op != "NOP"}
            shifts = [f"{op} {d:+d}" for op, d in sorted(diffs.items(), key=lambda x: -abs(x[1])) if d]
            if shifts:
                print("  " + ", ".join(shifts))


if __name__ == "__main__":
    main()
