#!/usr/bin/env python3
"""Fails when a file of the library includes a header of a layer it may not use (layers.txt).

Checks every file under src/ and include/weft/ (weft.h, the umbrella header, aside): an
#include "weft/<path>" names a public header, whose layer is its folder; an #include of a private
header ("x.h", "../x.h") is resolved next to the including file, then under src/. It also checks
that tools/ and examples/ include no private header of src/ (they use the public API only).

usage: check_layers.py SOURCE_DIR
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_graph(path: pathlib.Path):
    graph = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        layer, _, uses = line.partition(":")
        graph[layer.strip()] = set(uses.split()) | {layer.strip()}
    return graph


def layer_of(relative: pathlib.PurePosixPath, graph) -> str | None:
    """The layer of a path below src/ or include/weft/: the longest folder prefix that is a layer."""
    parts = relative.parts[:-1]
    if not parts:
        return "core"  # weft/version.h (generated); weft/weft.h, the umbrella, is not checked
    for n in range(len(parts), 0, -1):
        candidate = "/".join(parts[:n])
        if candidate in graph:
            return candidate
    return None


def main() -> int:
    root = pathlib.Path(sys.argv[1]).resolve()
    graph = read_graph(pathlib.Path(__file__).with_name("layers.txt"))
    src, public = root / "src", root / "include" / "weft"
    errors = []
    files = [p for base in (src, public) for p in sorted(base.rglob("*")) if p.suffix in (".h", ".cc")]
    for path in files:
        if path == public / "weft.h":
            continue
        base = src if path.is_relative_to(src) else public
        own = layer_of(pathlib.PurePosixPath(path.relative_to(base).as_posix()), graph)
        where = path.relative_to(root)
        if own is None:
            errors.append(f"{where}: in no layer of tests/layering/layers.txt")
            continue
        text = path.read_text()
        for match in INCLUDE.finditer(text):
            name = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            if name.startswith("weft/"):
                target = pathlib.PurePosixPath(name[len("weft/"):])
            else:
                local = (path.parent / name).resolve()
                if local.is_relative_to(src):
                    target = pathlib.PurePosixPath(local.relative_to(src).as_posix())
                elif local.is_relative_to(public):
                    target = pathlib.PurePosixPath(local.relative_to(public).as_posix())
                elif (src / name).exists():
                    target = pathlib.PurePosixPath(name)
                else:
                    errors.append(f"{where}:{line}: \"{name}\" is neither a weft header nor next to the file")
                    continue
            used = layer_of(target, graph)
            if used is None:
                errors.append(f"{where}:{line}: \"{name}\" is in no layer")
            elif used not in graph[own]:
                errors.append(f"{where}:{line}: layer {own} may not include \"{name}\" (layer {used}); "
                              f"it may use: {' '.join(sorted(graph[own] - {own})) or 'nothing'}")
    for folder in ("tools", "examples"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cc") or not path.is_file():
                continue
            text = path.read_text()
            for match in INCLUDE.finditer(text):
                resolved = (path.parent / match.group(1)).resolve()
                if resolved.is_relative_to(src):
                    line = text.count("\n", 0, match.start()) + 1
                    errors.append(f"{path.relative_to(root)}:{line}: \"{match.group(1)}\" is private to the "
                                  f"library ({folder}/ uses the public API only)")
    for error in errors:
        print(error)
    print(f"check_layers: {len(files)} files, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
