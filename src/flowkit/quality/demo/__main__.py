"""``python -m flowkit.quality.demo``: run the demo, or (for flowkit's maintainers) record its
cassette again after the prompts changed."""

from __future__ import annotations

import sys

from ...terminal.demo_llm import demo_module_parser
from . import record_cassette, run_quality_demo


def main(argv: list[str] | None = None) -> int:
    args = demo_module_parser("quality", records_from="the scripted editor").parse_args(argv)
    if args.record:
        print(f"recorded {record_cassette()}")
        return 0
    return run_quality_demo(args.store, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
