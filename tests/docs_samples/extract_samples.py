#!/usr/bin/env python3
"""Writes each C++ code sample of README.md and docs/*.md as a translation unit to compile.

Every ```c++ (or ```cpp) block must be preceded by a line saying how it is compiled:

  <!-- compiled as: file -->                      a whole translation unit, as written
  <!-- compiled as: namespace -->                 declarations after the prelude (prelude.h)
  <!-- compiled as: function(PARAMS) -->          statements in `void sample(PARAMS)`
  <!-- compiled as: coroutine(PARAMS) -->         statements in `weft::Task<> sample(PARAMS)`
  <!-- compiled as: handler(MESSAGE) -->          members of a weft::InboundHandler<MESSAGE>

A Markdown file's samples other than whole files share one translation unit (one test), each in a
namespace of its own: parsing weft's headers is most of a compile. A block without its line fails
to compile with the reason (#error). `#line` keeps the compiler's messages on the Markdown's lines.

usage: extract_samples.py SOURCE_DIR OUT_DIR   prints "name|path" per translation unit
"""
import pathlib
import re
import sys

ANNOTATION = re.compile(r"^<!--\s*compiled as:\s*(.*?)\s*-->\s*$")
FENCE_OPEN = re.compile(r"^```(c\+\+|cpp)\s*$")


def scoped_sample(kind: str, body: str, where: str, line: int) -> str:
    """A sample of any kind but `file`, in namespace weft_doc_sample::at_<line>."""
    at = f'#line {line} "{where}"\n'
    open_ns = f"namespace weft_doc_sample::at_{line} {{\n"
    close_ns = "}\n"
    if kind == "namespace":
        return open_ns + at + body + close_ns
    match = re.fullmatch(r"(function|coroutine|handler)\((.*)\)", kind, re.S)
    if not match:
        return f'#error "{where}:{line - 1}: unknown sample kind \'{kind}\'"\n'
    form, params = match.groups()
    if form == "function":
        head, tail = f"void sample({params}) {{\n", "}\n"
    elif form == "coroutine":
        head, tail = f"weft::Task<> sample({params}) {{\n", "  co_return;\n}\n"
    else:
        head = f"struct Sample final : weft::InboundHandler<{params}> {{\n"
        tail = "};\n"
    return open_ns + head + at + body + tail + close_ns


def samples(source_dir: pathlib.Path):
    files = [source_dir / "README.md"] + sorted((source_dir / "docs").glob("*.md"))
    for path in files:
        where = path.relative_to(source_dir).as_posix()
        lines = path.read_text().splitlines()
        shared = []  # the file's samples that are not whole files
        i = 0
        while i < len(lines):
            if not FENCE_OPEN.match(lines[i]):
                i += 1
                continue
            start = i
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body = "\n".join(lines[start + 1:j]) + "\n"
            previous = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            annotation = ANNOTATION.match(previous)
            if not annotation:
                shared.append(f'#error "{where}:{start + 1}: this C++ sample has no '
                              f'<!-- compiled as: ... --> line before it (tests/docs_samples/extract_samples.py)"\n')
            elif annotation.group(1) == "file":
                yield name_of(f"{path.stem}_{start + 1}"), f'#line {start + 2} "{where}"\n' + body
            else:
                shared.append(scoped_sample(annotation.group(1), body, where, start + 2))
            i = j + 1
        if shared:
            yield name_of(path.stem), '#include "prelude.h"\n' + "".join(shared)


def name_of(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", text)


def main() -> int:
    source_dir, out_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.cc"):
        old.unlink()
    for name, unit in samples(source_dir):
        target = out_dir / f"{name}.cc"
        target.write_text(unit)
        print(f"{name}|{target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
