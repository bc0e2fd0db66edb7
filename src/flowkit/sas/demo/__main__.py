"""``python -m flowkit.sas.demo``: run the demo, or (for flowkit's maintainers) record its
cassette again after the prompts changed."""

from __future__ import annotations

import sys

from ...terminal.demo_llm import demo_module_parser
from . import record_cassette, run_sas_demo


def main(argv: list[str] | None = None) -> int:
    parser = demo_module_parser("sas", records_from="answers.json")
    parser.add_argument(
        "--output-dir", metavar="DIR", help="where the robot program goes (default: STORE/output)"
    )
    args = parser.parse_args(argv)
    if args.record:
        print(f"recorded {record_cassette()}")
        return 0
    return run_sas_demo(args.store, args.output_dir, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
