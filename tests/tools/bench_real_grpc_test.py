"""weft-bench against the built gRPC servers: a quick grpc run beside grpc++'s, and the grpc-ir run that
flags seed 004's allocator cache turned off (bench_real_test.py has the rest; the two run side by side)."""
import os
import shutil
import subprocess
import tempfile
import unittest

from bench_helpers import BIN_DIR, assert_all_stopped, load_json, weft_bench


def _grpc_peer_installed():
    return subprocess.run(["pkg-config", "--exists", "grpc++", "protobuf"]).returncode == 0 and \
        shutil.which("grpc_cpp_plugin") is not None


@unittest.skipUnless(os.access(os.path.join(BIN_DIR, "weft-grpc-bench-server"), os.X_OK),
                     f"weft-grpc-bench-server not built in {BIN_DIR}")
@unittest.skipUnless(_grpc_peer_installed(), "grpc++ not installed (libgrpc++-dev protobuf-compiler-grpc)")
class RealGrpcRun(unittest.TestCase):
    """weft-bench run grpc, quick: the weft server with its executors and grpc++'s, interleaved, the JMH
    table, the executors' CPU measured, every process stopped, and a run compared with itself passes."""

    def test_grpc_quick_run(self):
        with tempfile.TemporaryDirectory(prefix="weft-bench-grpc-") as tmp:
            proc = weft_bench("run", "grpc", "--quick", "--repeat", "2", "--columns", "weft-epoll-direct-false,grpc++",
                              "--out", tmp, timeout=230)
            self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
            self.assertRegex(proc.stdout, r"Benchmark +\(direct\) +\(transport\) +Mode +Cnt +Score +Error +Units")
            doc = load_json(os.path.join(tmp, "results.json"))
            (t,) = doc["tables"]
            self.assertEqual(len(t["cells"]), 6)
            self.assertEqual(t["settings"]["repeat"], 2)
            for c in t["cells"]:
                self.assertEqual(len(c["repeats"]), 2)
                self.assertGreater(c["value"], 0)
                self.assertGreater(c["cpu_us_per_req"], 0)
                if c["column"] == "weft-epoll-direct-false":
                    self.assertGreater(c["exec_cpu_us_per_req"], 0)  # its handlers ran on the executors
                else:
                    self.assertIsNone(c["exec_cpu_us_per_req"])
            assert_all_stopped(self, doc)
            path = os.path.join(tmp, "results.json")
            same = weft_bench("compare", path, path)
            self.assertEqual(same.returncode, 0, same.stdout)


@unittest.skipUnless(os.access(os.path.join(BIN_DIR, "weft-grpc-bench-server"), os.X_OK) and shutil.which("valgrind"),
                     "needs weft-grpc-bench-server and valgrind")
class RealGrpcInstructionsRun(unittest.TestCase):
    """Seed 004 made deterministic: the executor threads' allocator cache turned off between two quick runs
    of grpc-ir, on whatever else this machine runs meanwhile, is flagged by compare. A whole second of
    warm-up: a new server's first messages cost more (its caches and arenas fill), and three repeats, so
    that one slow repeat does not move the median."""

    def test_compare_flags_the_allocator_cache_turned_off(self):
        with tempfile.TemporaryDirectory(prefix="weft-bench-grpc-ir-") as tmp:
            paths = []
            for name, cache in (("with-cache", "true"), ("without-cache", "false")):
                out = os.path.join(tmp, name)
                env = {**os.environ, "WEFT_GRPC_EXECUTOR_THREAD_CACHE": cache}
                proc = weft_bench("run", "grpc-ir", "--quick", "--columns", "weft-epoll-direct-false", "--rows",
                                  "streamingCallsMessageThroughput", "--duration", "1", "--warmup", "1", "--repeat", "3",
                                  "--out", out, timeout=230, env=env)
                self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
                doc = load_json(os.path.join(out, "results.json"))
                (t,) = doc["tables"]
                (c,) = t["cells"]
                self.assertNotIn("error", c, proc.stdout[-2000:])
                self.assertEqual(len(c["repeats"]), 3)
                self.assertGreater(c["value"], 100)  # instructions per message, not a rate
                assert_all_stopped(self, doc)
                paths.append(os.path.join(out, "results.json"))
            same = weft_bench("compare", paths[0], paths[0])
            self.assertEqual(same.returncode, 0, same.stdout)
            flagged = weft_bench("compare", *paths)
            self.assertEqual(flagged.returncode, 1, flagged.stdout)
            self.assertIn("REGRESSION grpc-ir streamingCallsMessageThroughput weft-epoll-direct-false", flagged.stdout)


if __name__ == "__main__":
    unittest.main()
