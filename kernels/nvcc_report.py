#!/usr/bin/env python3
"""nvcc_report.py REPORT NVCC ARGS... — run nvcc, and keep what it prints
(ptxas's register/spill report under -Xptxas -v: several screens) in REPORT
instead of the build's output.  When nvcc fails, all of it is shown too."""
import subprocess
import sys

report, cmd = sys.argv[1], sys.argv[2:]
r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
with open(report, "w") as f:
    f.write(r.stdout)
if r.returncode != 0:
    sys.stderr.write(r.stdout)
sys.exit(r.returncode)
