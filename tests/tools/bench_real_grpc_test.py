"""weft-bench against the built gRPC servers: a quick grpc run beside grpc++'s, and the grpc-ir run that
flags seed 004's allocator cache turned off (bench_real_test.py has the rest; the two files run side by side)."""
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


if __name__ == "__main__":
    unittest.main()
