"""Shared helpers for the weft-bench tests: where the tool and the built binaries are."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "bench"))
BIN_DIR = os.environ.get("WEFT_BIN_DIR", os.path.join(REPO, "build", "release", "bin"))
LAUNCHER = os.path.join(REPO, "tools", "bench", "weft-bench")


def weft_bench(*args, timeout=120, env=None):
    """Run the launcher with the build's bin dir (and `env`, else this process's environment); returns the
    CompletedProcess."""
    argv = [sys.executable, LAUNCHER] + list(args)
    if args and args[0] == "run":
        argv += ["--build-dir", os.path.dirname(BIN_DIR)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def table(values_by_row, column="loop", higher_is_better=True, table_id="tfb-plaintext"):
    """A results table in weft-bench's format from {row: [repeat values]}."""
    cells = [{"row": r, "column": column, "value": sorted(v)[len(v) // 2], "cpu_us_per_req": 1.0, "p99_us": 100.0,
              "repeats": [{"value": x, "cpu_us_per_req": 1.0, "p99_us": 100.0} for x in v]}
             for r, v in values_by_row.items()]
    return {"id": table_id, "suite": "tfb", "title": "Type: plaintext, pipeline 16, Result: requests/s",
            "row_label": "connections", "rows": list(values_by_row), "metric": "rps", "unit": "req/s",
            "higher_is_better": higher_is_better, "columns": [{"name": column, "command": [], "note": None}],
            "cells": cells}


def results_doc(*tables):
    return {"tool": "weft-bench", "schema": 1, "suite": "tfb", "environment": {"git_commit": "abc"},
            "settings": {}, "notes": [], "tables": list(tables), "processes": []}


def assert_all_stopped(test, doc):
    """Every process the run recorded has exited, and its children with it."""
    from weft_bench.processes import session_members  # tools/bench is on the path once this module loads
    test.assertTrue(doc["processes"], "the run recorded the processes it started")
    for p in doc["processes"]:
        test.assertEqual(session_members(p["pid"]), [], f"{p['name']} (pid {p['pid']}) or a child is still running")
