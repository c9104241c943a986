#!/usr/bin/env python3
"""Writes each C++ code sample of README.md and docs/*.md as a translation unit to compile.

Every ```c++ (or ```cpp) block must be preceded by a line saying how it is compiled:

  <!-- compiled as: file -->                      a whole translation unit, as written
  <!-- compiled as: namespace -->                 declarations after the prelude (prelude.h)
  <!-- compiled as: function(PARAMS) -->          statements in `void sample(PARAMS)`
  <!-- compiled as: coroutine(PARAMS) -->         statements in `weft::Task<> sample(PARAMS)`
  <!-- compiled as: handler(MESSAGE) -->          members of a weft::InboundHandler<MESSAGE>

A block without one becomes a translation unit that fails with the reason (#error), so that the
test names the file and line. `#line` keeps the compiler's messages on the Markdown's lines.

usage: extract_samples.py SOURCE_DIR OUT_DIR   prints "name|path" per sample
"""
import pathlib
import re
import sys

ANNOTATION = re.compile(r"^<!--\s*compiled as:\s*(.*?)\s*-->\s*$")
FENCE_OPEN = re.compile(r"^```(c\+\+|cpp)\s*$")


def translation_unit(kind: str, body: str, where: str, line: int) -> str:
    at = f'#line {line} "{where}"\n'
    prelude = '#include "prelude.h"\n'
    if kind == "file":
        return at + body
    if kind == "namespace":
        return prelude + "namespace weft_doc_sample {\n" + at + body + "}  // namespace weft_doc_sample\n"
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
    return (prelude + "namespace weft_doc_sample {\n" + head + at + body + tail +
            "}  // namespace weft_doc_sample\n")


def samples(source_dir: pathlib.Path):
    files = [source_dir / "README.md"] + sorted((source_dir / "docs").glob("*.md"))
    for path in files:
        where = path.relative_to(source_dir).as_posix()
        lines = path.read_text().splitlines()
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
            name = re.sub(r"[^A-Za-z0-9]", "_", f"{path.stem}_{start + 1}")
            if annotation:
                unit = translation_unit(annotation.group(1), body, where, start + 2)
            else:
                unit = (f'#error "{where}:{start + 1}: this C++ sample has no '
                        f'<!-- compiled as: ... --> line before it (tests/docs_samples/extract_samples.py)"\n')
            yield name, unit
            i = j + 1


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
