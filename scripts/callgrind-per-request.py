#!/usr/bin/env python3
"""Events per request of a callgrind profile: the program's totals over the calls to one function,
the function each request passes through once.
  scripts/callgrind-per-request.py PROFILE FUNCTION_REGEX
  e.g. scripts/callgrind-per-request.py build/callgrind.http.out 'weft::http::ServerCodec::emit_request'
Prints "N requests; per request: Ir=... Dr=... ..." (the callgrind-*.sh scripts' last line)."""
import re
import subprocess
import sys

profile, function = sys.argv[1], sys.argv[2]
out = subprocess.run(["callgrind_annotate", "--inclusive=no", profile], capture_output=True, text=True).stdout
totals = [int(x.replace(",", "")) for x in re.findall(r"([\d,]+) \(", next(l for l in out.splitlines() if "PROGRAM TOTALS" in l))]
text = open(profile).read()
ids = set(re.findall(r"^c?fn=\((\d+)\) " + function, text, re.M))
lines = text.splitlines()
n = sum(int(lines[i + 1].split("=")[1].split()[0]) for i, line in enumerate(lines)
        if (m := re.match(r"^cfn=\((\d+)\)", line)) and m.group(1) in ids and lines[i + 1].startswith("calls="))
if n == 0:
    sys.exit(f"{profile}: no call to {function}")
names = "Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw".split()
print(f"{n} requests; per request: " + " ".join(f"{k}={v / n:.1f}" for k, v in zip(names, totals)))
