"""``python -m flowkit.quality.demo [--record]``: run the demo, or re-record its cassette."""

from __future__ import annotations

import sys

from . import record_cassette, run_quality_demo

if "--record" in sys.argv[1:]:
    print(f"recorded {record_cassette()}")
else:
    sys.exit(run_quality_demo(None, sys.stdout))
