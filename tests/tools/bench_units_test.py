"""weft-bench without servers: table layout, wrk parsing, results round trip, compare rule, peers, suites."""
import argparse
import contextlib
import copy
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import unittest.mock

from bench_helpers import results_doc, table
from weft_bench import cli, compare, conditions, html_report, instructions, load, peers, processes, results, suites, tables

# A real wrk report (weft-hello, pipeline 16, 256 connections), including wrk's 0.00us p99 quirk.
WRK_OUTPUT = """Running 1s test @ http://127.0.0.1:18998/plaintext
  1 threads and 256 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     7.76ms    4.84ms  40.09ms   68.63%
    Req/Sec   221.46k    49.09k  291.38k    60.00%
  Latency Distribution
     50%    7.35ms
     75%   11.15ms
     90%   16.77ms
     99%    0.00us
  228144 requests in 1.08s, 28.07MB read
  Socket errors: connect 0, read 3, write 0, timeout 7
  Non-2xx or 3xx responses: 2
Requests/sec: 211932.24
Transfer/sec:     26.00MB
"""

# A real h2load report (h2o, 4 connections x 4 streams, -D 1).
H2LOAD_OUTPUT = """Main benchmark duration is over for thread #0. Stopping all clients.
Stopped all clients for thread #0

finished in 1.00s, 69480.00 req/s, 2.85MB/s
requests: 69480 total, 69496 started, 69480 done, 69478 succeeded, 2 failed, 0 errored, 0 timeout
status codes: 69480 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 2.85MB (2988164) total, 814.61KB (834164) headers (space savings 93.02%), 882.07KB (903240) data
                     min         max         mean         sd        +/- sd
time for request:       30us     16.38ms       183us       532us    98.33%
time for connect:      105us       174us       149us        30us    75.00%
time to 1st byte:     7.16ms      7.51ms      7.42ms       172us    75.00%
req/s           :   17345.51    17413.26    17367.74       30.79    75.00%
"""

# Real `openssl s_time` reports against nginx: -new (TLS 1.3), and -reuse -tls1_2 (every connection resumed).
S_TIME_NEW = """Collecting connection statistics for 1 seconds
*******************************************************************

749 connections in 0.55s; 1361.82 connections/user sec, bytes read 0
749 connections in 2 real seconds, 0 bytes read per connection
"""
S_TIME_REUSE = """

Now timing with session id reuse.
starting
rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr
rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr*

3475 connections in 0.35s; 9928.57 connections/user sec, bytes read 0
3475 connections in 2 real seconds, 0 bytes read per connection
"""


class TableFormatting(unittest.TestCase):
    def test_grid_is_shaped_like_the_seed_tables(self):
        text = tables.grid("Type: json", ["pipeline", "loop", "peer"], [[4, 123, 45678], [16, 9, 1]])
        self.assertEqual(text.splitlines(), [
            "+-------------------------+",
            "|        Type: json       |",
            "+----------+------+-------+",
            "| pipeline | loop |  peer |",
            "+----------+------+-------+",
            "|    4     | 123  | 45678 |",
            "|    16    |  9   |   1   |",
            "+----------+------+-------+",
        ])

    def test_long_title_widens_the_table(self):
        lines = tables.grid("a very long title that is wider than the cells", ["c", "x"], [[1, 2]]).splitlines()
        self.assertEqual(len({len(l) for l in lines}), 1)

    def test_render_shows_na_notes_and_requested_figures(self):
        t = table({16: [100.0, 110.0, 120.0]})
        t["columns"].append({"name": "offload", "command": [], "note": "n/a: exit 2: mode 'offload' is not built yet"})
        text = tables.render(t, ["rps", "cpu", "p99"])
        self.assertIn("110 1.00us/req p99 100.00us", text)
        self.assertIn("n/a", text)
        self.assertIn("offload: n/a: exit 2: mode 'offload' is not built yet", text)


class WrkParsing(unittest.TestCase):
    def test_wrk_report_becomes_a_weft_load_dict(self):
        r = load.parse_wrk(WRK_OUTPUT)
        self.assertEqual(r["responses"], 228144)
        self.assertAlmostEqual(r["rps"], 211932.24)
        self.assertAlmostEqual(r["latency_us"]["p50"], 7350.0)
        self.assertAlmostEqual(r["latency_us"]["max"], 40090.0)
        self.assertIsNone(r["latency_us"]["p99"], "wrk's 0.00us p99 under pipelining is unknown, not zero")
        self.assertEqual(r["errors"]["read"], 3)
        self.assertEqual(r["errors"]["timeout"], 7)
        self.assertEqual(r["errors"]["status"], 2)
        self.assertEqual(r["bytes_read"], int(28.07 * 1024 * 1024))

    def test_wrk_without_a_result_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "unable to connect"):
            load.parse_wrk("unable to connect to 127.0.0.1:1 Connection refused\n")

    def test_h2load_report_becomes_a_weft_load_dict(self):
        r = load.parse_h2load(H2LOAD_OUTPUT)
        self.assertEqual(r["responses"], 69478, "succeeded requests only")
        self.assertAlmostEqual(r["rps"], 69478.0)
        self.assertEqual(r["errors"]["parse"], 2)
        self.assertAlmostEqual(r["latency_us"]["mean"], 183.0)
        self.assertAlmostEqual(r["latency_us"]["max"], 16380.0)
        self.assertIsNone(r["latency_us"]["p99"], "h2load gives no percentiles")
        self.assertEqual(r["bytes_read"], 2988164)

    def test_h2load_without_a_result_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "h2load: no result"):
            load.parse_h2load("connect to 127.0.0.1:1 failed\nNo protocol negotiated. Aborted\n")

    def test_h2load_argv_rounds_seconds_up(self):
        argv, _ = load.H2Load("/usr/bin/h2load").h2("http://127.0.0.1:9000/plaintext", 64, 16, 0.5)
        self.assertEqual(argv, ["/usr/bin/h2load", "-c", "64", "-m", "16", "-t", "1", "-D", "1",
                                "http://127.0.0.1:9000/plaintext"])
        self.assertFalse(load.H2Load("/nonexistent/h2load").supports("h2"))
        self.assertFalse(load.H2Load("/nonexistent/h2load").supports("http"))

    def test_s_time_reports_handshakes_and_how_many_resumed(self):
        r = load.parse_s_time(S_TIME_NEW, 1, False)
        self.assertEqual(r["handshakes"], 749)
        self.assertAlmostEqual(r["handshakes_per_s"], 749.0)
        self.assertNotIn("resumed_fraction", r)
        r = load.parse_s_time(S_TIME_REUSE, 2, True)
        self.assertEqual(r["handshakes"], 3475)
        self.assertAlmostEqual(r["resumed_fraction"], 97 / 98)
        with self.assertRaisesRegex(ValueError, "s_time: no result"):
            load.parse_s_time("connect: Connection refused\n", 1, False)

    def test_s_time_argv_resumes_by_session_id_over_tls_1_2(self):
        argv, _ = load.STime("openssl").handshake("127.0.0.1", 9443, True, 0.5)
        self.assertEqual(argv, ["openssl", "s_time", "-connect", "127.0.0.1:9443", "-time", "1", "-reuse", "-tls1_2"])
        argv, _ = load.STime("openssl").handshake("127.0.0.1", 9443, False, 3)
        self.assertEqual(argv[-1], "-new")

    def test_weft_load_argv_follows_its_cli(self):
        argv, _ = load.WeftLoad("/b/weft-load").echo("127.0.0.1", 9000, 10, 100, 128, 256)
        self.assertEqual(argv[:8], ["/b/weft-load", "echo", "127.0.0.1:9000+10", "--threads", "100",
                                    "--rounds", "128", "--size"])
        os.unlink(argv[-1])

    def test_weft_load_json_file_is_read(self):
        argv, parse = load.WeftLoad("/b/weft-load").stream("127.0.0.1", 9000, 4, 64, 0.5)
        self.assertEqual(argv[argv.index("-d") + 1], "0.5")
        with open(argv[-1], "w") as f:
            f.write('{"tool":"weft-load","mode":"stream","messages_per_s":5.0,"received_messages":10}')
        self.assertEqual(parse("")["messages_per_s"], 5.0)
        self.assertFalse(os.path.exists(argv[-1]))


class ResultsRoundTrip(unittest.TestCase):
    def test_save_then_load_gives_the_same_document(self):
        doc = results_doc(table({4: [1.0, 2.0, 3.0], 16: [4.0, 5.0, 6.0]}))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "results.json")
            results.save(doc, path)
            self.assertEqual(results.load(path), doc)

    def test_other_json_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.json")
            with open(path, "w") as f:
                f.write("{}")
            with self.assertRaisesRegex(ValueError, "not a weft-bench results file"):
                results.load(path)


def regressions(base, new, threshold=None):
    """(compare's text, its number of regressions)."""
    text, counts = compare.compare(base, new, threshold)
    return text, counts[compare.REGRESSION]


class CompareRule(unittest.TestCase):
    base = table({16: [100.0, 102.0, 98.0], 256: [200.0, 190.0, 210.0]})

    def slowed(self, factor, higher=True):
        t = copy.deepcopy(self.base)
        t["higher_is_better"] = higher
        for c in t["cells"]:
            c["value"] *= factor
            for r in c["repeats"]:
                r["value"] *= factor
        return t

    def test_a_15_percent_slowdown_is_a_regression(self):
        text, n = regressions(results_doc(self.base), results_doc(self.slowed(0.85)))
        self.assertEqual(n, 2)
        self.assertIn("-15.0%", text)
        self.assertIn("REGRESSION", text)

    def test_a_change_inside_the_spread_is_not(self):
        new = table({16: [95.0, 101.0, 99.0], 256: [180.0, 215.0, 199.0]})
        self.assertEqual(compare.compare(results_doc(self.base), results_doc(new))[1][compare.REGRESSION], 0)

    def test_a_small_change_under_the_threshold_is_not(self):
        self.assertEqual(compare.compare(results_doc(self.base), results_doc(self.slowed(0.93)))[1][compare.REGRESSION], 0)

    def test_lower_is_better_tables_regress_upwards(self):
        base = copy.deepcopy(self.base)
        base["higher_is_better"] = False
        self.assertEqual(compare.compare(results_doc(base), results_doc(self.slowed(1.2, higher=False)))[1][compare.REGRESSION], 2)
        self.assertEqual(compare.compare(results_doc(base), results_doc(self.slowed(0.8, higher=False)))[1][compare.REGRESSION], 0)


class CompareVerdicts(unittest.TestCase):
    """compare as a decision: each cell a regression, an improvement, no change or inconclusive."""
    base = table({16: [100.0, 102.0, 98.0], 256: [200.0, 190.0, 210.0]})

    def verdicts(self, base, new, threshold=None):
        text, counts = compare.compare(results_doc(base), results_doc(new), threshold)
        return text, {k: v for k, v in counts.items() if v and k != "shared"}

    def test_alike_runs_are_no_change(self):
        again = table({16: [101.0, 99.0, 100.0], 256: [201.0, 195.0, 205.0]})
        text, counts = self.verdicts(self.base, again)
        self.assertEqual(counts, {compare.NO_CHANGE: 2}, text)
        self.assertIn("0 regression(s), 0 improvement(s), 2 no change, 0 inconclusive of 2", text)

    def test_a_noisy_pair_is_inconclusive_not_a_pass(self):
        # The seed-004 quick run: +206.5% ±429.8 was printed as "0 regression(s)".
        noisy = table({16: [40.0, 306.5, 900.0], 256: [190.0, 200.0, 210.0]})
        text, counts = self.verdicts(self.base, noisy)
        self.assertEqual(counts, {compare.INCONCLUSIVE: 1, compare.NO_CHANGE: 1}, text)
        self.assertRegex(text, r"\+206\.5% ±\d+\.\d +inconclusive p=")

    def test_a_faster_run_is_an_improvement_and_a_slower_one_a_regression(self):
        faster = table({16: [130.0, 128.0, 133.0], 256: [260.0, 250.0, 270.0]})
        self.assertEqual(self.verdicts(self.base, faster)[1], {compare.IMPROVEMENT: 2})
        self.assertEqual(self.verdicts(faster, self.base)[1], {compare.REGRESSION: 2})

    def test_a_real_change_under_the_threshold_is_no_change(self):
        tight = table({16: [100.0, 100.5, 99.5]})
        moved = table({16: [104.0, 104.5, 103.5]})
        text, counts = self.verdicts(tight, moved)
        self.assertEqual(counts, {compare.NO_CHANGE: 1}, text)

    def test_mann_whitney_p_values(self):
        self.assertAlmostEqual(compare.mann_whitney_p([1, 2, 3], [4, 5, 6]), 0.1)
        self.assertAlmostEqual(compare.mann_whitney_p([1, 2, 3, 4], [5, 6, 7, 8]), 2 / 70)
        self.assertAlmostEqual(compare.mann_whitney_p([1, 3, 5], [2, 4, 6]), 0.7)
        self.assertEqual(compare.mann_whitney_p([], [1.0]), None)
        text, _ = self.verdicts(self.base, table({16: [50.0, 51.0, 49.0]}))
        self.assertIn("regression p=0.1 n=3+3", text)

    def test_the_runs_differences_come_first(self):
        a, b = results_doc(self.base), results_doc(copy.deepcopy(self.base))
        a["settings"], b["settings"] = {"repeat": 3, "duration_s": 5.0}, {"repeat": 10, "duration_s": 5.0}
        b["environment"] = {"git_commit": "def", "load_average": "1.5"}
        text, _ = compare.compare(a, b)
        lines = text.splitlines()
        self.assertEqual(lines[0], "Differences between the runs (weigh them first):")
        self.assertIn("  settings.repeat: 3 -> 10", lines)
        self.assertIn("  environment.load_average: None -> 1.5", lines)

    def test_every_line_fits_120_columns_and_carries_its_unit(self):
        wide = table({16: [100.0, 102.0, 98.0]}, column="weft-" + "x" * 150)
        text, _ = compare.compare(results_doc(wide), results_doc(copy.deepcopy(wide)))
        self.assertLessEqual(max(len(line) for line in text.splitlines()), 120, text)
        self.assertIn("100 req/s", text)

    def test_the_cli_exits_2_for_runs_that_share_nothing_and_3_when_strict_and_inconclusive(self):
        other_suite = table({16: [100.0, 102.0, 98.0]}, table_id="echo-100-ports")
        noisy = table({16: [40.0, 306.5, 900.0], 256: [190.0, 200.0, 210.0]})
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for name, t in {"base": self.base, "other": other_suite, "noisy": noisy}.items():
                paths[name] = os.path.join(d, name + ".json")
                results.save(results_doc(t), paths[name])
            with contextlib.redirect_stdout(io.StringIO()) as out:
                self.assertEqual(cli.main(["compare", paths["base"], paths["other"]]), 2)
                self.assertEqual(cli.main(["compare", paths["base"], paths["noisy"]]), 0)
                self.assertEqual(cli.main(["compare", paths["base"], paths["noisy"], "--strict"]), 3)
                self.assertEqual(cli.main(["compare", paths["noisy"], paths["base"], "--strict"]), 3)
            self.assertIn("nothing to compare", out.getvalue())


class DataThatWarns(unittest.TestCase):
    """Spread past the threshold and points measured on a busy machine are said, not passed silently."""

    def test_a_cell_whose_repeats_spread_is_warned_about(self):
        # Netty's three repeats in one discussion: 12,784 / 55,623 / 154,350 req/s, printed as sound.
        t = table({16: [12784.0, 55623.0, 154350.0], 256: [200.0, 201.0, 199.0]}, column="netty")
        text = tables.render(t)
        self.assertIn("WARNING connections=16 netty: repeats spread 255% (12784..154350 req/s)", text)
        self.assertNotIn("connections=256", text)

    def test_a_point_measured_while_others_were_busy_is_warned_about(self):
        t = table({16: [100.0, 101.0, 99.0]})
        t["cells"][0]["repeats"][1]["other_core_pct"] = 85.0
        t["cells"][0]["repeats"][2]["other_core_pct"] = 3.0
        self.assertIn("WARNING connections=16 loop: 1 of 3 repeats ran while other processes used up to 85% of a core",
                      tables.render(t))

    def test_failures_show_in_the_cell_and_under_the_table(self):
        # The downstream overload cell "2.33 0.90s 8.9MiB" hid 7 answers to 2,051 requests and 1,020 timeouts.
        t = table({64: [2.33]}, column="offload")
        t["cells"][0]["repeats"][0]["load"] = {"requests": 2051, "responses": 7,
                                               "errors": {"timeout": 1020, "status": 3, "connect": 0}}
        text = tables.render(t)
        self.assertIn("2.33 !1023 failed", text)
        self.assertIn("WARNING connections=64 offload: 1023 failed (timeout 1020, status 3), 7 answered: "
                      "availability 0.7%", text)

    def test_proc_parsing(self):
        self.assertEqual(conditions.cpu_jiffies("cpu  100 5 50 9000 10 1 2 7 0 0\n"), (155, 7))
        self.assertIsNone(conditions.cpu_jiffies("intr 1 2 3"))
        self.assertEqual(conditions.cpu_mhz("cpu MHz\t\t: 2000.5\nmodel name: x\ncpu MHz\t\t: 3000.5\n"), 2500)
        self.assertIsNone(conditions.cpu_mhz("model name: x\n"))

    def test_the_conditions_line(self):
        env = {"cpu_model": "Xeon", "cpu_count": 2, "cpu_mhz": 2200, "kernel": "6.1", "load_average_before": [1.5, 1, 0.5],
               "busy_processes_before": ["cc1plus (97%)"]}
        line = conditions.describe(env, {"server_cpus": "0", "load_cpus": "1"})
        self.assertEqual(line, "conditions: Xeon, 2 CPUs at 2200 MHz; kernel 6.1; server on CPUs 0, load on 1; "
                               "load average 1.5 1 0.5; busy: cc1plus (97%)")

    def test_a_point_watch_measures_others_not_its_own_children(self):
        watch = conditions.PointWatch()
        subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)  # a "load" that is waited for
        other, steal = watch.other_core_pct(server_cpu_s=0.0)
        self.assertIsNotNone(other)
        self.assertGreaterEqual(other, 0.0)
        self.assertGreaterEqual(steal, 0.0)


class Report(unittest.TestCase):
    """The HTML report's pieces, without a browser (bench_real_test.py loads it in chromium)."""

    def peers_table(self):
        t = table({16: [100.0, 102.0, 98.0], 256: [200.0, 190.0, 210.0]}, column="loop")
        t["columns"][0]["command"] = ["/b/weft-hello", "--loops", "1"]
        nginx = table({16: [50.0, 51.0, 49.0], 256: [80.0, 82.0, 78.0]}, column="nginx")
        nginx["columns"][0]["command"] = ["nginx", "-c", "x"]
        for c in nginx["cells"]:
            c["cpu_us_per_req"] = 4.0
        t["columns"] += nginx["columns"]
        t["cells"] += nginx["cells"]
        return t

    def test_the_headline_puts_wefts_best_column_against_each_peer(self):
        text = html_report.headline(self.peers_table())
        self.assertIn("connections 16: <b>loop</b> vs nginx: <b>2.00x</b> the req/s, server CPU per request 0.25x", text)
        self.assertIn("connections 256: <b>loop</b> vs nginx: <b>2.50x</b>", text)

    def test_human_ticks_and_a_log_axis_for_wide_ranges(self):
        self.assertEqual(html_report.nice_ticks(162067.5), [0, 50000, 100000, 150000, 200000])
        self.assertEqual([html_report.human(v) for v in (1645869, 150000, 0.25, 0)], ["1.65M", "150k", "0.25", "0"])
        wide = table({1: [10.0, 10.0, 10.0], 1000: [50000.0, 50000.0, 50000.0]})
        self.assertIn('data-scale="log"', html_report.bar_chart(wide, "figure"))
        self.assertIn('data-scale="linear"', html_report.bar_chart(self.peers_table(), "figure"))

    def test_error_bars_span_the_repeats(self):
        svg = html_report.bar_chart(table({16: [100.0, 120.0, 80.0]}), "figure")
        self.assertIn("(80..120)", svg)
        self.assertEqual(svg.count('class="error"'), 1)

    def test_the_compare_page_colours_each_cell_by_its_verdict(self):
        base = table({16: [100.0, 102.0, 98.0], 256: [200.0, 190.0, 210.0]})
        new = table({16: [50.0, 51.0, 49.0], 256: [201.0, 195.0, 205.0]})
        page = html_report.render_compare(results_doc(base), results_doc(new))
        self.assertIn('<tr class="regression"><th>16</th>', page)
        self.assertIn('<tr class="no-change"><th>256</th>', page)


class InstalledPeers(unittest.TestCase):
    def test_tfb_has_nginx_as_a_column_or_a_line_saying_how_to_add_it(self):
        (plaintext, _) = suites.build(["tfb"], suites.Context("/b", True, 2, {}, build_peers=False))
        (nginx,) = [c for c in plaintext.columns if c.name == "nginx"]
        if shutil.which("nginx") or os.access("/usr/sbin/nginx", os.X_OK):
            self.assertIsNone(nginx.note)
            self.assertIn("worker_processes 2;", nginx.argv[2])  # as many workers as the server's loops
        else:
            self.assertEqual(nginx.note, "n/a: nginx is not installed (apt-get install nginx-light)")
        (plaintext, _) = suites.build(["tfb"], suites.Context("/b", True, 2, {}, build_peers=False, installed_peers=False))
        self.assertNotIn("nginx", [c.name for c in plaintext.columns])
        given = suites.Context("/b", True, 2, {"tfb": [("nginx", "nginx -c mine {port}")]}, build_peers=False)
        (plaintext, _) = suites.build(["tfb"], given)
        self.assertEqual([c.argv for c in plaintext.columns if c.name == "nginx"], [["nginx", "-c", "mine", "{port}"]])


class InstalledPeerRecipes(unittest.TestCase):
    EXPECTED = {"tfb": ["nginx", "h2o", "netty"], "echo": ["netty"], "h2": ["nginx", "h2o"], "tls": ["nginx", "h2o"],
                "scaling": ["nginx"], "stream": [], "downstream": [], "ws": ["beast-ws", "node-ws"]}

    def test_each_suite_has_its_peers_as_columns_or_lines_saying_how_to_add_them(self):
        ctx = suites.Context("/b", True, 2, {}, build_peers=False)
        for suite, names in self.EXPECTED.items():
            cols = peers.installed(ctx, suite, "/c/cert.pem", "/c/key.pem")
            self.assertEqual([c.name for c in cols], names, suite)
            for c in cols:
                if c.note is not None:
                    self.assertRegex(c.note, r"^n/a: .*\(apt-get install [a-z0-9 .-]+\)", f"{suite} {c.name}")
                    self.assertEqual(c.argv, [])
                else:
                    self.assertEqual(c.argv[:2], ["sh", "-c"], f"{suite} {c.name}")

    def test_a_recipe_takes_the_runs_port_and_loops_when_the_server_starts(self):
        ctx = suites.Context("/b", True, 2, {}, build_peers=False)
        for suite in self.EXPECTED:
            for c in peers.installed(ctx, suite, "/c/cert.pem", "/c/key.pem"):
                if c.note is None:  # the runner fills in the argv as it starts the server
                    script = [a.format(port=23456, ports=3, loops=2) for a in c.argv][2]
                    self.assertIn("23456", script, f"{suite} {c.name}")
                    self.assertNotIn("{port}", script)

    @unittest.skipUnless(peers.find_program("nginx"), "nginx is not installed")
    def test_nginx_listens_as_each_suite_needs(self):
        ctx = suites.Context("/b", True, 2, {}, build_peers=False)
        conf = {s: peers.installed(ctx, s, "/c/cert.pem", "/c/key.pem")[0].argv[2].format(port=23456, loops=4)
                for s in ("tfb", "h2", "tls", "scaling")}
        self.assertIn("listen 127.0.0.1:23456 backlog", conf["tfb"])
        self.assertIn("listen 127.0.0.1:23456 http2 backlog", conf["h2"])
        self.assertIn("listen 127.0.0.1:23456 ssl http2 backlog", conf["tls"])
        self.assertIn("ssl_certificate /c/cert.pem;", conf["tls"])
        self.assertIn("worker_processes 2;", conf["tfb"])
        self.assertIn("worker_processes 4;", conf["scaling"])  # the row's loops

    def test_a_peer_given_by_name_replaces_the_installed_one_and_installed_peers_can_be_left_out(self):
        given = suites.Context("/b", True, 1, {"h2": [("nginx", "mine {port}")]}, build_peers=False)
        self.assertEqual([c.name for c in peers.installed(given, "h2")], ["h2o"])
        off = suites.Context("/b", True, 1, {}, build_peers=False, installed_peers=False)
        self.assertEqual(peers.installed(off, "tfb"), [])

    def test_a_jvm_peer_is_warmed_up_for_its_jit(self):
        netty = peers.netty("netty", "HelloServer", "{port} 1")
        if netty.note is None:
            self.assertEqual(netty.min_warmup, peers.JVM_WARMUP_S)
        else:
            self.assertIn("libnetty-java", netty.note)


class BeastPeerBuild(unittest.TestCase):
    """The Beast peer is rebuilt when its source's bytes change, not when a fresh checkout makes the source
    newer than the binary; a column that must build first waits for its build, not the usual 10 s."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="weft-beast-peer-")
        self.src, self.out = os.path.join(self.tmp.name, "src"), os.path.join(self.tmp.name, "out")
        os.makedirs(self.src)
        os.makedirs(self.out)
        self.source, self.binary = os.path.join(self.src, "beast_echo.cc"), os.path.join(self.out, "beast-ws-echo")
        with open(self.source, "w") as f:
            f.write("int main() {}\n")
        with open(self.binary, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(self.binary, 0o755)
        self.env = unittest.mock.patch.dict(os.environ, {"WEFT_WS_PEER_DIR": self.src, "WEFT_WS_PEER_OUT": self.out})
        self.env.start()

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def stamp(self, digest):
        with open(self.binary + ".sha256", "w") as f:
            f.write(digest + "\n")

    def test_a_stamped_binary_counts_whatever_the_mtimes(self):
        self.stamp(hashlib.sha256(b"int main() {}\n").hexdigest())
        os.utime(self.binary, (1, 1))  # older than the source, as after a fresh checkout of the peers
        self.assertTrue(peers.beast_ws_built())
        with open(self.source, "a") as f:
            f.write("// changed\n")
        self.assertFalse(peers.beast_ws_built())

    def test_an_unstamped_binary_counts_when_newer_than_its_source(self):
        os.utime(self.source, (1, 1))
        self.assertTrue(peers.beast_ws_built())
        os.utime(self.binary, (0, 0))
        self.assertFalse(peers.beast_ws_built())
        os.remove(self.binary)
        self.assertFalse(peers.beast_ws_built())

    @unittest.skipUnless(shutil.which("g++") and os.path.exists("/usr/include/boost/beast.hpp"), "needs g++ and Boost.Beast")
    def test_the_column_builds_and_stamps_only_when_it_must_and_then_waits_for_its_build(self):
        self.stamp("0" * 64)
        column = peers.beast_ws("beast-ws")
        script = column.argv[2]
        self.assertIn("g++", script)
        self.assertIn(hashlib.sha256(b"int main() {}\n").hexdigest(), script)
        self.assertGreater(column.start_timeout, 60)
        self.stamp(hashlib.sha256(b"int main() {}\n").hexdigest())
        column = peers.beast_ws("beast-ws")
        self.assertNotIn("g++", column.argv[2])
        self.assertIsNone(column.start_timeout)


class Logs(unittest.TestCase):
    def test_a_column_name_with_a_slash_gets_a_log_file_in_the_log_directory(self):
        with tempfile.TemporaryDirectory() as d:
            sup = processes.Supervisor(os.path.join(d, "logs"))
            proc = sup.start("echo-weft-echo-server/io_uring", ["sh", "-c", "echo started >&2"])
            proc.popen.wait(timeout=10)
            sup.stop_all()
            self.assertEqual(os.listdir(os.path.join(d, "logs")), ["echo-weft-echo-server_io_uring.log"])
            with open(os.path.join(d, "logs", "echo-weft-echo-server_io_uring.log")) as f:
                self.assertIn("started", f.read())


class Options(unittest.TestCase):
    def test_peer_takes_an_optional_suite_and_needs_a_port(self):
        self.assertEqual(cli.parse_peer("nginx=nginx -p {port}"), ("tfb", "nginx", "nginx -p {port}"))
        self.assertEqual(cli.parse_peer("echo:netty=java E {port} {ports}")[:2], ("echo", "netty"))
        with self.assertRaisesRegex(argparse.ArgumentTypeError, "needs {port}"):
            cli.parse_peer("nginx=nginx")
        with self.assertRaisesRegex(argparse.ArgumentTypeError, "show takes"):
            cli.parse_show("rps,latency")

    def test_suites_quick_scales_rows(self):
        ctx = suites.Context(bin_dir="/b", quick=True, server_cpus=1, peers={"tfb": [("nginx", "nginx {port}")]},
                             installed_peers=False)
        tfb = suites.build(["tfb"], ctx)
        self.assertEqual([t.id for t in tfb], ["tfb-plaintext", "tfb-json"])
        names = [c.name for c in tfb[0].columns]
        self.assertEqual(names, suites.HELLO_MODES + ["io_uring", "blocking", "nginx"])
        async_col = tfb[1].columns[names.index("coroutine-async")]
        self.assertEqual(async_col.path_suffix, "-async")
        full = suites.build(["tfb", "echo"], suites.Context("/b", False, 1, {}))
        self.assertEqual(full[0].rows, [4, 16, 64, 256, 1024])
        self.assertEqual(full[1].rows, [4, 16, 64, 256, 512])
        self.assertEqual(full[2].rows[-1], 2800)
        echo_columns = {c.name: c.argv for c in full[2].columns}
        self.assertEqual(echo_columns["weft-echo-server/io_uring"][-2:], ["--transport", "io_uring"])
        stream_columns = {c.name: c.argv for c in suites.build(["stream"], ctx)[0].columns}
        self.assertEqual(stream_columns["weft-stream-server/io_uring"][-1], "io_uring")

    def test_scaling_suite_runs_one_server_per_loop_count_on_that_many_cpus(self):
        self.assertEqual(suites.scaling_rows(1), [1])
        self.assertEqual(suites.scaling_rows(8), [1, 2, 4, 8])
        self.assertEqual(suites.scaling_rows(6), [1, 2, 4, 6])
        ctx = suites.Context("/b", False, 8, {"scaling": [("netty", "java Hello {port} {loops}")]}, load_cpus=8)
        [t] = suites.build(["scaling"], ctx)
        self.assertTrue(t.loops_per_row)
        self.assertEqual(t.rows, [1, 2, 4, 8])
        names = [c.name for c in t.columns]
        self.assertEqual(names, ["weft acceptor", "weft reuseport", "weft least-connections", "nginx", "netty"])
        acceptor = t.columns[0].argv
        self.assertEqual([a.format(port=9000, ports=1, loops=4) for a in acceptor],
                         ["/b/weft-hello", "--port", "9000", "--loops", "4", "--accept", "acceptor", "--pin"])
        self.assertEqual(t.columns[4].argv[-1].format(port=1, ports=1, loops=4), "4")
        nginx = t.columns[3]
        if nginx.note is None:  # nginx installed: its workers follow {loops}, its port {port}
            script = nginx.argv[-1].format(port=9000, ports=1, loops=4)
            self.assertIn("worker_processes 4;", script)
            self.assertIn("listen 127.0.0.1:9000", script)
        # Fixed connections and load threads, whatever the row (the row is the server's loops).
        argv, _ = t.load_argv(load.WeftLoad("weft-load"), t.columns[0], 9000, 4, 5)
        self.assertEqual(argv[argv.index("-c") + 1], "512")
        self.assertEqual(argv[argv.index("-t") + 1], "8")
        # The server's CPUs: its share's first `loops`; more loops than that is a measurement it cannot make.
        from weft_bench.runner import Measurement, Runner
        runner = Runner(None, None, ("0,1,2,3", "4,5,6,7"), 1, 1, 0)
        self.assertEqual(runner.server_cpus_for(t, 2), "0,1")
        with self.assertRaisesRegex(Measurement, "8 loops need 8 server CPUs"):
            runner.server_cpus_for(t, 8)
        tfb = suites.build(["tfb"], ctx)[0]
        self.assertEqual(runner.server_cpus_for(tfb, 2), "0,1,2,3", "other suites keep the whole share")

    def test_downstream_suite_columns_rows_and_overload(self):
        self.assertIn("downstream", suites.ALL)
        full = suites.build(["downstream"], suites.Context("/b", False, 1, {}))
        self.assertEqual([t.id for t in full], ["downstream", "downstream-overload"])
        steady, overload = full
        self.assertEqual([c.name for c in steady.columns],
                         ["sync-loop", "offload-4", "offload-8", "offload-12", "offload-16", "coroutine"])
        self.assertEqual(steady.rows, [15, 64, 256])
        self.assertIn(["--offload-threads", "12"], [c.argv[-2:] for c in steady.columns])
        self.assertEqual(steady.show, ["rps", "mean", "rss"])
        self.assertTrue(steady.restart_per_row)
        self.assertGreater(overload.rows[0], 16 / 0.25 * 10, "overload is far above the largest pool")
        argv, _ = steady.load_argv(load.WeftLoad("weft-load"), steady.columns[0], 9000, 15, 5)
        self.assertIn("http://127.0.0.1:9000/downstream?ms=250", argv)
        self.assertEqual(argv[argv.index("--timeout") + 1], "60")
        quick = suites.build(["downstream"], suites.Context("/b", True, 1, {}))
        # Under a minute: 6 columns, each cell a fresh server and one measurement.
        budget = sum(len(t.columns) * len(t.rows) * t.repeat * (t.duration + 1.0) for t in quick)
        self.assertLess(budget, 60)

    def test_h2_suite_uses_weft_load_h2_when_built_else_h2load(self):
        with tempfile.TemporaryDirectory() as d:
            binary = os.path.join(d, "weft-load")
            with open(binary, "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(binary, 0o755)
            (t,) = suites.build(["h2"], suites.Context(d, True, 1, {}))
            self.assertIsInstance(t.loader, load.WeftLoad)
            argv, _ = t.load_argv(t.loader, t.columns[0], 9000, 64, 2.5)
            self.assertEqual(argv[:12], [binary, "h2", "http://127.0.0.1:9000/plaintext", "-c", "64", "-m", "16",
                                         "-t", "1", "-d", "2.5", "--json"])
            os.unlink(argv[-1])
            forced = suites.build(["h2"], suites.Context(d, True, 1, {}, h2_load="h2load"))[0]
            self.assertIsInstance(forced.loader, load.H2Load)
        self.assertIsInstance(suites.build(["h2"], suites.Context("/b", True, 1, {}, h2_load="weft-load"))[0].loader,
                              load.WeftLoad)
        with self.assertRaisesRegex(ValueError, "HTTP/2 only"):
            load.WeftLoad("weft-load").h2("https://127.0.0.1:1/", 1, 1, 1, h1=True)

    def test_ws_suite_echoes_64_bytes_and_16_kib_over_100_connections_against_the_peers(self):
        ctx = suites.Context("/b", True, 1, {"ws": [("uws", "uws-echo {port}")]})
        tables = suites.build(["ws"], ctx)
        self.assertEqual([t.id for t in tables], ["ws-64", "ws-16384"])
        for t, size in zip(tables, (64, 16384)):
            self.assertEqual(t.rows, [100])
            self.assertEqual([c.name for c in t.columns], ["loop", "coroutine", "io_uring", "beast-ws", "node-ws", "uws"])
            self.assertEqual(t.count_key, "responses")
            self.assertTrue(t.precise_cpu)
            argv, _ = t.load_argv(load.WeftLoad("/b/weft-load"), t.columns[0], 9000, 100, 2.5)
            self.assertEqual(argv[:12], ["/b/weft-load", "ws", "ws://127.0.0.1:9000/ws", "-c", "100", "-m", "1",
                                         "-s", str(size), "-d", "2.5", "--binary"])
            self.assertNotIn("--deflate", argv)
            os.unlink(argv[-1])
        self.assertIn("blocking", [c.name for c in suites.build(["ws"], suites.Context("/b", False, 1, {}))[0].columns])
        self.assertNotIn("ws", suites.ALL)  # `all` stays within its five minutes

    def test_h2_suite_uses_h2load_without_weft_load(self):
        ctx = suites.Context("/b", False, 2, {"h2": [("h2o", "h2o-wrapper {port}")]})
        (t,) = suites.build(["h2"], ctx)
        # The installed nginx, then h2o as given (it replaces the installed one).
        self.assertEqual([c.name for c in t.columns], ["epoll", "io_uring", "coroutine", "nginx", "h2o"])
        self.assertEqual(t.columns[-1].argv, ["h2o-wrapper", "{port}"])
        self.assertEqual(t.rows, [16, 64, 256])
        self.assertIsInstance(t.loader, load.H2Load)
        argv, _ = t.load_argv(t.loader, t.columns[1], 9000, 64, 5)
        self.assertEqual(argv[-1], "http://127.0.0.1:9000/plaintext")
        self.assertEqual(argv[argv.index("-m") + 1], "16")
        self.assertIn(["--transport", "io_uring"], [t.columns[1].argv[i:i + 2] for i in range(len(t.columns[1].argv))])
        self.assertEqual(suites.build(["h2"], suites.Context("/b", True, 1, {}))[0].rows, [64])
        self.assertEqual(cli.parse_peer("h2:nginx=nginx-h2c {port}")[:2], ("h2", "nginx"))

    @unittest.skipUnless(shutil.which("openssl"), "needs the openssl command")
    def test_tls_suite_serves_https_with_a_certificate_made_for_the_run(self):
        ctx = suites.Context("/b", True, 1, {"tls": [("nginx", "nginx-tls {port}")]})
        plain, json_, full, resumed = suites.build(["tls"], ctx)
        self.assertEqual([c.name for c in plain.columns], ["epoll", "io_uring", "coroutine", "h2o", "nginx"])
        self.assertEqual(plain.rows, [256])  # quick
        self.assertEqual(suites.build(["tls"], suites.Context("/b", False, 1, {}))[0].rows, [16, 256])
        argv = plain.columns[0].argv
        cert, key = argv[argv.index("--tls-cert") + 1], argv[argv.index("--tls-key") + 1]
        with open(cert) as f:
            self.assertIn("BEGIN CERTIFICATE", f.read())
        self.assertTrue(os.path.exists(key))
        h2load, _ = plain.load_argv(plain.loader, plain.columns[0], 9443, 256, 5)
        self.assertEqual(h2load[-2:], ["--h1", "https://127.0.0.1:9443/plaintext"])
        self.assertEqual(h2load[h2load.index("-m") + 1], "16")
        self.assertEqual(json_.params["pipeline"], 1)
        s_time, _ = resumed.load_argv(resumed.loader, resumed.columns[0], 9443, 1, 5)
        self.assertIn("-reuse", s_time)
        self.assertEqual((full.count_key, resumed.metric), ("handshakes", "handshakes_per_s"))
        self.assertIn("tls", suites.ALL)  # make run has it, quick

    def test_render_downstream_cells_show_mean_and_peak_rss(self):
        t = table({15: [60.0]}, column="offload-16")
        t["show"] = ["rps", "mean", "rss"]
        t["cells"][0].update(mean_us=250_000.0, peak_rss_kib=6144, idle_rss_kib=5120)
        text = tables.render(t)
        self.assertIn("60 0.25s 6.0MiB", text)
        self.assertIn("idle RSS 5.0MiB", text)
        self.assertIn("mean response time", text)
        self.assertNotIn("MiB", tables.render(t, ["rps", "p99"]))


def jmh_table(values_by_cell, cpu_by_cell=None, table_id="grpc"):
    """A JMH-layout table (the grpc suite's) from {(row, column): [repeat values]}; cpu_by_cell gives the
    server CPU per operation of each repeat (default 1.0)."""
    rows = list(dict.fromkeys(r for r, _ in values_by_cell))
    columns = list(dict.fromkeys(c for _, c in values_by_cell))
    cells = []
    for (r, c), values in values_by_cell.items():
        cpu = (cpu_by_cell or {}).get((r, c), [1.0] * len(values))
        cells.append({"row": r, "column": c, "value": sorted(values)[len(values) // 2], "cpu_us_per_req": sorted(cpu)[len(cpu) // 2],
                      "repeats": [{"value": v, "cpu_us_per_req": u} for v, u in zip(values, cpu)]})
    params = {"weft-epoll-direct-false": {"direct": "false", "transport": "weft-epoll"},
              "grpc++": {"direct": "-", "transport": "grpc++"}}
    return {"id": table_id, "suite": "grpc", "title": "gRPC", "row_label": "Benchmark", "rows": rows,
            "metric": "messages_per_s", "unit": "ops/s", "higher_is_better": True, "layout": "jmh",
            "threshold_pct": suites.GRPC_THRESHOLD_PCT,
            "columns": [{"name": c, "command": [], "note": None, "params": params.get(c, {})} for c in columns],
            "cells": cells}


# Ten repeats like JMH's ten iterations, about 1% apart.
TEN = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.7, 99.3, 100.0]
STREAM = "streamingCallsMessageThroughput"


class JmhStatistics(unittest.TestCase):
    def test_student_t_quantiles_match_the_tables(self):
        from weft_bench import stats
        self.assertAlmostEqual(stats.student_t_quantile(0.9995, 9), 4.781, places=3)  # JMH's 99.9%, 10 iterations
        self.assertAlmostEqual(stats.student_t_quantile(0.975, 4), 2.776, places=3)
        self.assertAlmostEqual(stats.student_t_quantile(0.9995, 1000), 3.300, places=2)

    def test_score_is_the_mean_and_error_the_99_9_percent_half_width(self):
        from weft_bench import stats
        score, error, count = stats.jmh_score([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        self.assertEqual((score, count), (5.5, 10))
        self.assertAlmostEqual(error, 4.780913 * 3.0276504 / 10 ** 0.5, places=4)
        self.assertEqual(stats.jmh_score([7.0])[1], None)  # JMH prints NaN for one iteration

    def test_table_has_the_seeds_columns(self):
        t = jmh_table({(STREAM, "weft-epoll-direct-false"): TEN, (STREAM, "grpc++"): [50.0, 52.0]})
        lines = tables.render(t).splitlines()
        self.assertEqual(lines[1].split(), ["Benchmark", "(direct)", "(transport)", "Mode", "Cnt", "Score", "Error", "Units"])
        self.assertEqual(lines[2].split()[:5], ["GrpcBenchmark." + STREAM, "false", "weft-epoll", "thrpt", "10"])
        self.assertRegex(lines[2], r"100\.000  ± +0\.\d{3}  ops/s$")
        self.assertEqual(lines[3].split()[1:5], ["-", "grpc++", "thrpt", "2"])


class JmhCompare(unittest.TestCase):
    def scaled(self, factor, cpu_factor=1.0):
        return jmh_table({(STREAM, "weft-epoll-direct-false"): [v * factor for v in TEN]},
                         {(STREAM, "weft-epoll-direct-false"): [cpu_factor * v / 100.0 for v in TEN]})

    def test_two_runs_alike_pass(self):
        base = self.scaled(1.0)
        other = jmh_table({(STREAM, "weft-epoll-direct-false"): list(reversed(TEN))},
                          {(STREAM, "weft-epoll-direct-false"): [1.0] * 10})
        text, n = regressions(results_doc(base), results_doc(other))
        self.assertEqual(n, 0, text)

    def test_fourteen_percent_fewer_messages_is_a_regression(self):  # the seed's loss
        text, n = regressions(results_doc(self.scaled(1.0)), results_doc(self.scaled(0.86)))
        self.assertEqual(n, 1, text)
        self.assertIn("REGRESSION grpc " + STREAM + " weft-epoll-direct-false score", text)

    def test_more_server_cpu_per_message_is_a_regression_even_at_the_same_score(self):
        # The client bounds the score; the server's share shows in its CPU per message.
        text, n = regressions(results_doc(self.scaled(1.0)), results_doc(self.scaled(1.0, cpu_factor=1.08)))
        self.assertEqual(n, 1, text)
        self.assertIn("cpu/op", text.splitlines()[-2])

    def test_a_change_under_the_tables_threshold_is_not(self):
        self.assertEqual(compare.compare(results_doc(self.scaled(1.0)), results_doc(self.scaled(0.98)))[1][compare.REGRESSION], 0)

    def test_a_change_inside_both_errors_is_not(self):
        wide = [60.0, 140.0, 80.0, 120.0, 100.0, 90.0, 110.0, 70.0, 130.0, 100.0]
        base = jmh_table({(STREAM, "grpc++"): wide})
        new = jmh_table({(STREAM, "grpc++"): [v * 0.9 for v in wide]})
        self.assertEqual(compare.compare(results_doc(base), results_doc(new))[1][compare.REGRESSION], 0)

    def test_an_explicit_threshold_overrides_the_tables(self):
        self.assertEqual(compare.compare(results_doc(self.scaled(1.0)), results_doc(self.scaled(0.86)), 20.0)[1][compare.REGRESSION], 0)


class GrpcSuite(unittest.TestCase):
    def test_columns_rows_and_load(self):
        ctx = suites.Context("/b", False, 1, {}, build_peers=False, grpc_load="grpc++")
        (t,) = suites.build(["grpc"], ctx)
        self.assertEqual([c.name for c in t.columns],
                         ["weft-epoll-direct-true", "weft-epoll-direct-false", "weft-io_uring-direct-true",
                          "weft-io_uring-direct-false", "grpc++"])
        self.assertEqual(t.rows, [STREAM, "unaryCallsThroughput", "pingPongMessageThroughput"])
        self.assertEqual((t.layout, t.default_repeat, t.metric, t.count_key), ("jmh", 10, "messages_per_s", "messages"))
        col = t.columns[3]
        self.assertEqual(col.params, {"direct": "false", "transport": "weft-io_uring"})
        self.assertEqual(col.argv[0], "/b/weft-grpc-bench-server")
        self.assertIn(["--direct", "false"], [col.argv[i:i + 2] for i in range(len(col.argv))])
        self.assertIsInstance(t.loader, load.GrpcPeerClient)
        argv, parse = t.load_argv(t.loader, col, 9000, STREAM, 2.0)
        self.assertEqual(argv[1:], ["127.0.0.1:9000", "stream", "10", "2", "0", "1"])
        out = parse("mode=stream threads=10 size=0 channels=1 messages=300000 seconds=2.00 rate=150000 failures=0\n")
        self.assertEqual((out["messages"], out["messages_per_s"]), (300000, 150000.0))
        with self.assertRaisesRegex(ValueError, "no result"):
            parse("cannot connect to 127.0.0.1:9000\n")
        self.assertEqual(t.load_argv(t.loader, col, 9000, "pingPongMessageThroughput", 2.0)[0][2], "pingpong")
        self.assertIn("grpc", suites.ALL)  # make run's quick run has it too
        quick = suites.build(["grpc"], suites.Context("/b", True, 1, {}, build_peers=False))[0]
        self.assertEqual([c.name for c in quick.columns], ["weft-epoll-direct-true", "weft-epoll-direct-false", "grpc++"])

    def test_weft_load_grpc_is_the_default_load(self):
        ctx = suites.Context("/b", True, 1, {}, build_peers=False)
        (t,) = suites.build(["grpc"], ctx)
        self.assertIsInstance(t.loader, load.GrpcWeftLoad)
        argv, _ = t.load_argv(t.loader, t.columns[0], 9000, "unaryCallsThroughput", 1.0)
        self.assertEqual(argv[:4], ["/b/weft-load", "grpc", "unary", "127.0.0.1:9000"])
        # The rest as weft-load grpc's command line takes it (tools/load/grpc_load.cc).
        self.assertEqual(argv[4:12], ["-c", "1", "--streams", "10", "--size", "0", "-d", "1"])
        self.assertEqual(argv[12], "--json")
        self.assertEqual(t.default_repeat, 3)
        self.assertEqual(cli.parser().parse_args(["run", "grpc"]).grpc_load, "weft-load")
        self.assertEqual(cli.parser().parse_args(["run", "grpc", "--grpc-load", "grpc++"]).grpc_load, "grpc++")


class JmhCompareAgainstTheReference(unittest.TestCase):
    """Tables with a reference column (grpc++, measured in the same rounds): the Score is compared as
    ratios to the reference's of the same round, so that the machine's load on throughput cancels; CPU
    per operation as measured (CPU time leaves the load out; the reference's own CPU/op wanders)."""

    def run_table(self, weft_speed=1.0, machine=1.0, executor_cpu=0.1, reference_cpu=5.0):
        slow = [machine * (1.0 + 0.3 * (i % 3)) for i in range(10)]  # the load drifts round by round
        jitter = [1.0 + 0.02 * (i % 3) for i in range(10)]            # CPU per operation barely moves
        weft = "weft-epoll-direct-false"
        t = jmh_table({(STREAM, weft): [100.0 / s * weft_speed for s in slow],
                       (STREAM, "grpc++"): [50.0 / s for s in slow]},
                      {(STREAM, weft): [1.0 * j for j in jitter], (STREAM, "grpc++"): [reference_cpu * s for s in slow]})
        t["reference_column"] = "grpc++"
        for c in t["cells"]:
            for i, r in enumerate(c["repeats"]):
                r["exec_cpu_us_per_req"] = executor_cpu * jitter[i] if c["column"] == weft else None
        return t

    def test_a_slower_machine_is_no_regression(self):
        text, n = regressions(results_doc(self.run_table()), results_doc(self.run_table(machine=1.4)))
        self.assertEqual(n, 0, text)
        self.assertIn("score/ref", text)

    def test_the_reference_spending_less_cpu_per_operation_is_no_regression(self):
        text, n = regressions(results_doc(self.run_table()), results_doc(self.run_table(reference_cpu=2.5)))
        self.assertEqual(n, 0, text)

    def test_executors_doing_twice_the_work_is_one(self):
        text, n = regressions(results_doc(self.run_table()), results_doc(self.run_table(machine=1.2, executor_cpu=0.2)))
        self.assertEqual(n, 1, text)
        self.assertIn("REGRESSION grpc " + STREAM + " weft-epoll-direct-false executor cpu/op:", text)

    def test_the_reference_itself_is_not_compared(self):
        text, _ = compare.compare(results_doc(self.run_table()), results_doc(self.run_table()))
        self.assertNotIn("|    -     |", text)


if __name__ == "__main__":
    unittest.main()


class GrpcInstructions(unittest.TestCase):
    def test_the_servers_run_under_callgrind_and_the_cells_are_instructions_per_message(self):
        (t,) = suites.build(["grpc-ir"], suites.Context("/b", True, 1, {}, build_peers=False))
        self.assertEqual([c.name for c in t.columns], ["weft-epoll-direct-false", "weft-epoll-direct-true"])
        self.assertEqual((t.metric, t.unit, t.higher_is_better, t.instructions), ("instructions_per_op", "Ir/msg", False, True))
        self.assertEqual(t.threshold_pct, suites.GRPC_IR_THRESHOLD_PCT)
        self.assertNotIn("grpc-ir", suites.ALL)
        for c in t.columns:
            if instructions.available():
                self.assertEqual(c.argv[:3], ["valgrind", "--tool=callgrind", "--quiet"])
                self.assertTrue(c.argv[3].startswith("--callgrind-out-file="))
                self.assertEqual(c.argv[4], "/b/weft-grpc-bench-server")
            else:
                self.assertEqual(c.note, instructions.VALGRIND_MISSING)

    def test_a_busy_machine_is_not_a_warning_for_instruction_counts(self):
        t = table({"unaryCallsThroughput": [100.0, 100.0]})
        for c in t["cells"]:
            for r in c["repeats"]:
                r["other_core_pct"] = 150.0
        self.assertTrue(any("busy machine" in w for w in conditions.warnings(t)))
        t["instructions"] = True
        self.assertFalse(any("busy machine" in w for w in conditions.warnings(t)))

    def test_rows_keeps_the_rows_named_and_drops_tables_left_empty(self):
        ctx = suites.Context("/b", True, 1, {}, build_peers=False, installed_peers=False,
                             rows={"streamingCallsMessageThroughput", "256"})
        tables_ = suites.build(["grpc", "tfb", "h2"], ctx)
        self.assertEqual([(t.id, t.rows) for t in tables_],
                         [("grpc", ["streamingCallsMessageThroughput"]), ("tfb-plaintext", [256]), ("tfb-json", [256])])
        with self.assertRaisesRegex(KeyError, "no table of h2 has the rows 7"):
            suites.build(["h2"], suites.Context("/b", True, 1, {}, rows={"7"}))
