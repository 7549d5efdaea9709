"""The Python-client suite: drives a live kapi through the official `kubernetes`
client's typed APIs (which deserialize every response into strict models) and
checks results with plain asserts. Each check runs on its own; the run ends with
"N passed, M failed" and a non-zero exit on any failure.
Run by scripts/python-suite with KUBECONFIG pointing at the server's admin config.
"""

import os
import sys

# The checks live in scripts/python_suite, one module per area; each runs its
# checks as it is imported, in this order (the last one deletes the namespace).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_suite"))

import common  # noqa: E402
import basics  # noqa: E402,F401
import workloads  # noqa: E402,F401
import apis  # noqa: E402,F401

print(f"python suite: {common.passed} passed, {common.failed} failed")
sys.exit(1 if common.failed else 0)
