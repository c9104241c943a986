"""Results files: the environment a run happened in, every repeat, and reading them back."""
import datetime
import json
import os
import platform
import subprocess

SCHEMA = 1


def _cmd(argv, cwd=None):
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def cmake_cache(build_dir):
    values = {}
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt")) as f:
            for line in f:
                if "=" in line and not line.startswith(("#", "//")):
                    key, value = line.rstrip("\n").split("=", 1)
                    values[key.split(":", 1)[0]] = value
    except OSError:
        pass
    return values


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment(build_dir, repo_dir):
    cache = cmake_cache(build_dir)
    compiler = cache.get("CMAKE_CXX_COMPILER", "")
    build_type = cache.get("CMAKE_BUILD_TYPE", "")
    flags = " ".join(f for f in (cache.get("CMAKE_CXX_FLAGS", ""),
                                 cache.get(f"CMAKE_CXX_FLAGS_{build_type.upper()}", "")) if f)
    dirty = _cmd(["git", "status", "--porcelain", "--untracked-files=no"], repo_dir)
    return {
        "git_commit": _cmd(["git", "rev-parse", "HEAD"], repo_dir) or "unknown",
        "git_dirty": bool(dirty),
        "compiler": compiler,
        "compiler_version": (_cmd([compiler, "--version"]).splitlines() or [""])[0] if compiler else "",
        "build_type": build_type,
        "cxx_flags": flags,
        "sanitize": cache.get("WEFT_SANITIZE", ""),
        "build_dir": build_dir,
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        # Settings the servers read from the environment (WEFT_GRPC_EXECUTOR_THREAD_CACHE, ...).
        "weft_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("WEFT_") and k != "WEFT_BIN_DIR"},
    }


def default_out_dir(repo_dir):
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return os.path.join(repo_dir, "bench-results", stamp)


def save(results, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")


def load(path):
    with open(path) as f:
        results = json.load(f)
    if results.get("tool") != "weft-bench" or "tables" not in results:
        raise ValueError(f"{path}: not a weft-bench results file")
    return results


def cell(table, row, column):
    for c in table["cells"]:
        if c["row"] == row and c["column"] == column:
            return c
    return None
