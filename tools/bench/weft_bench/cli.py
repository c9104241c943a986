"""Command line: weft-bench run | compare | show."""
import argparse
import os
import sys

from . import compare as compare_mod
from . import conditions
from . import html_report, load, results, suites, tables
from .processes import ProcessError, Supervisor, cpu_plan
from . import runner as runner_mod
from .runner import Runner, log

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(os.path.dirname(os.path.dirname(PACKAGE_DIR)))
SHOW_CHOICES = ("rps", "cpu", "p99")


def find_bin_dir(invoked_as, build_dir):
    """build/<preset>/bin: --build-dir, else the launcher's own folder when it sits there (or beside an
    installed weft-load), else build/release."""
    if build_dir:
        return os.path.join(os.path.abspath(build_dir), "bin")
    here = os.path.dirname(os.path.abspath(invoked_as))
    if os.path.exists(os.path.join(here, "..", "CMakeCache.txt")) or os.path.exists(os.path.join(here, "weft-load")):
        return here
    return os.path.join(REPO_DIR, "build", "release", "bin")


def parse_peer(text):
    """'[SUITE:]NAME=COMMAND' -> (suite, name, command); the suite defaults to tfb."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--peer wants NAME=COMMAND, got '{text}'")
    name, command = text.split("=", 1)
    suite, _, name = name.rpartition(":")
    suite = suite or "tfb"
    if suite not in suites.SUITES:
        raise argparse.ArgumentTypeError(f"--peer: unknown suite '{suite}'")
    if "{port}" not in command:
        raise argparse.ArgumentTypeError(f"--peer {name}: the command needs {{port}}, where the free port goes")
    return suite, name, command


def parse_show(text):
    show = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in show if s not in SHOW_CHOICES]
    if bad or not show:
        raise argparse.ArgumentTypeError(f"--show takes a list of {','.join(SHOW_CHOICES)}, got '{text}'")
    return show


def parser():
    p = argparse.ArgumentParser(prog="weft-bench", description="weft's benchmark suites, tables, results and comparisons")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a suite and print its tables")
    r.add_argument("suite", nargs="?", default="all", help=f"{', '.join(list(suites.SUITES) + ['all'])} (default all: every suite but grpc-ir, scaling and ws)")
    r.add_argument("--quick", action="store_true", help="fewer rows and columns, 0.5 s points: 'all' in under five minutes on 2 cores")
    r.add_argument("--peer", action="append", default=[], type=parse_peer, metavar="[SUITE:]NAME=COMMAND",
                   help="another server as a column; {port} (and {ports} for echo) are filled in")
    r.add_argument("--out", help="results folder (default bench-results/<timestamp>)")
    r.add_argument("--show", type=parse_show, default=["rps"], help="cells: any of rps,cpu,p99 (default rps)")
    r.add_argument("--html", help="also write the HTML report here")
    r.add_argument("--repeat", type=int, help="measurements per point; the median is shown (default 3; the grpc "
                   "table: 10, its Score is their mean)")
    r.add_argument("--grpc-load", choices=["grpc++", "weft-load"], default="weft-load",
                   help="the grpc suite's load: weft-load grpc (default) or grpc++'s reference client, which buffers "
                        "a fast server stream without bound (docs/grpc-benchmark.md)")
    r.add_argument("--duration", type=float, help="seconds per measurement (default 5; with --quick 0.5, or 1 with wrk)")
    r.add_argument("--warmup", type=float, help="seconds of load before a server's first point (default 3; --quick: as --duration)")
    r.add_argument("--load", choices=["weft-load", "wrk"], help="load generator (default weft-load when built, else wrk)")
    r.add_argument("--h2-load", choices=["weft-load", "h2load"],
                   help="the h2 suite's load generator (default weft-load when built, else h2load)")
    r.add_argument("--columns", help="only these columns (comma-separated names)")
    r.add_argument("--rows", help="only these rows (comma-separated, as the tables write them: 256, unaryCallsThroughput); "
                                  "tables with none of them are left out")
    r.add_argument("--build-dir", help="build folder holding bin/ (default: the launcher's, else build/release)")
    r.add_argument("--no-pin", action="store_true", help="do not pin server and load to separate CPUs")
    r.add_argument("--no-installed-peers", action="store_true",
                   help="leave out the peers installed on this machine (nginx, h2o, Netty), --peer ones stay")
    c = sub.add_parser("compare", help="compare two results files cell by cell: regression, improvement, no change or "
                       "inconclusive; exit 1 on a regression, 2 when they share no cell (3 with --strict: inconclusive)")
    c.add_argument("base")
    c.add_argument("new")
    c.add_argument("--threshold", type=float,
                   help=f"least change in %% that can count as a regression or improvement (default: the table's own "
                        f"-- the grpc table's is 3 -- else {compare_mod.DEFAULT_THRESHOLD:g})")
    c.add_argument("--html", help="also write the A-vs-B page here, each cell coloured by its verdict")
    c.add_argument("--strict", action="store_true",
                   help="exit 3 when no cell regressed but some are inconclusive (the runs cannot tell)")
    s = sub.add_parser("show", help="print the tables of a results file (and write its HTML report)")
    s.add_argument("results")
    s.add_argument("--show", type=parse_show, default=["rps"])
    s.add_argument("--html", help="write the HTML report here")
    s.add_argument("--markdown", help="write the tables as Markdown here")
    s.add_argument("--csv", help="write one line per cell as CSV here")
    return p


def cmd_run(args, invoked_as):
    if args.repeat is not None and args.repeat < 1:
        raise SystemExit("weft-bench: --repeat must be at least 1")
    bin_dir = find_bin_dir(invoked_as, args.build_dir)
    names = suites.ALL if args.suite == "all" else [args.suite]
    server_cpus, load_cpus = (None, None) if args.no_pin else cpu_plan()
    peers = {}
    for suite, name, command in args.peer:
        peers.setdefault(suite, []).append((name, command))
    ctx = suites.Context(bin_dir=bin_dir, quick=args.quick, peers=peers,
                         server_cpus=len(server_cpus.split(",")) if server_cpus else os.cpu_count(),
                         load_cpus=len(load_cpus.split(",")) if load_cpus else 1,
                         columns=set(args.columns.split(",")) if args.columns else None, h2_load=args.h2_load,
                         grpc_load=args.grpc_load, installed_peers=not args.no_installed_peers,
                         rows=set(args.rows.split(",")) if args.rows else None)
    try:
        table_specs = suites.build(names, ctx)
        adapter, note = load.choose(args.load, bin_dir, os.path.join(PACKAGE_DIR, "wrk_pipeline.lua"))
    except (KeyError, suites.NotBuilt, FileNotFoundError) as e:
        print(f"weft-bench: {e.args[0]}", file=sys.stderr)
        return 2
    if note:
        log(note)
    quick_s = 0.5 if adapter.fractional_seconds else 1.0  # wrk takes whole seconds only
    duration = args.duration or (quick_s if args.quick else 5.0)
    warmup = args.warmup if args.warmup is not None else (quick_s if args.quick else 3.0)
    # bench-results/ in the source tree; an installed weft-bench (no source tree) writes it in the current directory
    in_source_tree = os.path.exists(os.path.join(REPO_DIR, "CMakeLists.txt"))
    out_dir = args.out or results.default_out_dir(REPO_DIR if in_source_tree else os.getcwd())
    out_path = os.path.join(out_dir, "results.json")
    build_dir = os.path.dirname(bin_dir)
    doc = {"tool": "weft-bench", "schema": results.SCHEMA, "suite": args.suite,
           "environment": {**results.environment(build_dir, REPO_DIR), "cpu_mhz": conditions.cpu_mhz(),
                           **conditions.snapshot("before")},
           "settings": {"quick": args.quick, "repeat": args.repeat, "duration_s": duration, "warmup_s": warmup,
                        "load": adapter.name, "h2_load": next((t.loader.name for t in table_specs if t.suite == "h2"), None),
                        "server_cpus": server_cpus, "load_cpus": load_cpus},
           "notes": [note] if note else [], "tables": [], "processes": []}
    print(conditions.describe(doc["environment"], doc["settings"]), flush=True)
    sup = Supervisor(os.path.join(out_dir, "logs"))
    runner = Runner(sup, adapter, (server_cpus, load_cpus), args.repeat, duration, warmup)
    code = 0
    try:
        for spec in table_specs:
            table = runner.run_table(spec)
            doc["tables"].append(table)
            print(tables.render(table, args.show), flush=True)
    except KeyboardInterrupt:
        log("weft-bench: interrupted; stopping every process it started")
        code = 130
    except ProcessError as e:
        log(f"weft-bench: {e}")
        code = 1
    finally:
        sup.stop_all()
        doc["environment"].update(conditions.snapshot("after"))
        doc["processes"] = sup.started
        results.save(doc, out_path)
    print(f"results: {out_path}")
    if args.html:
        html_report.write(doc, args.html)
        print(f"report: {args.html}")
    return code


def cmd_compare(args):
    try:
        base, new = results.load(args.base), results.load(args.new)
    except (OSError, ValueError) as e:
        print(f"weft-bench: {e}", file=sys.stderr)
        return 2
    text, counts = compare_mod.compare(base, new, args.threshold)
    print(text)
    if args.html:
        html_report.write_compare(base, new, args.html, args.threshold)
        print(f"report: {args.html}")
    if counts["shared"] == 0:
        return 2
    if counts[compare_mod.REGRESSION]:
        return 1
    return 3 if args.strict and counts[compare_mod.INCONCLUSIVE] else 0


def cmd_show(args):
    try:
        doc = results.load(args.results)
    except (OSError, ValueError) as e:
        print(f"weft-bench: {e}", file=sys.stderr)
        return 2
    for table in doc["tables"]:
        print(tables.render(table, args.show))
    if args.html:
        html_report.write(doc, args.html)
        print(f"report: {args.html}")
    for path, text in ((args.markdown, html_report.to_markdown), (args.csv, html_report.to_csv)):
        if path:
            with open(path, "w") as f:
                f.write(text(doc))
            print(f"written: {path}")
    return 0


def main(argv, invoked_as=sys.argv[0]):
    args = parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args, invoked_as)
    if args.command == "compare":
        return cmd_compare(args)
    return cmd_show(args)
