"""``flowkit graph``, ``check`` and ``workflows``: look at flow definitions; no store involved."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..foundation._plain import counted
from ..terminal.errors import CommandError
from ..terminal.inputs import TARGET_HELP, load_target

if TYPE_CHECKING:
    from ..definition._flow import Flow
    from ..errors import FlowDefinitionError

__all__ = ["register"]


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    graph = commands.add_parser(
        "graph", parents=[common], help="print a flow as a Mermaid or DOT diagram, or JSON"
    )
    graph.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    graph.add_argument(
        "-f", "--format", choices=["mermaid", "dot", "json"], default="mermaid",
        help="output format (default: mermaid)",
    )  # fmt: skip
    graph.add_argument("--json", action="store_true", help="the same as --format json")
    graph.set_defaults(run=_cmd_graph)

    check = commands.add_parser(
        "check", parents=[common], help="validate flows; list every problem (exit 1 if any)"
    )
    check.add_argument("targets", metavar="TARGET", nargs="+", help=TARGET_HELP)
    check.add_argument("--json", action="store_true", help="print one JSON object per target")
    check.set_defaults(run=_cmd_check)

    workflows = commands.add_parser(
        "workflows", parents=[common], help="list the registered workflow names"
    )
    workflows.add_argument("--json", action="store_true", help="print a JSON object")
    workflows.set_defaults(run=_cmd_workflows)


def _print_problems(error: FlowDefinitionError, out: TextIO) -> None:
    count = len(error.problems)
    out.write(f"FAIL {error.flow}: {count} problem{'s' if count != 1 else ''}\n")
    for problem in error.problems:
        out.write(f"- {problem}\n")


def _cmd_graph(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import FlowDefinitionError

    try:
        flow = load_target(args.target)
    except FlowDefinitionError as exc:
        _print_problems(exc, sys.stderr)
        return 1
    if args.json or args.format == "json":
        from ..terminal.output import write_json

        write_json(flow.to_data(), out)
    else:
        from ..diagram import to_dot, to_mermaid

        out.write(to_mermaid(flow) if args.format == "mermaid" else to_dot(flow))
    return 0


def _summary(flow: Flow) -> dict[str, Any]:
    from ..definition._route_table import RouteTable

    tables = [r for r in flow.routes.values() if isinstance(r, RouteTable)]
    return {
        "nodes": len(flow.nodes),
        "gates": len(flow.gates),
        "final_states": len(flow.finals),
        "route_tables": len(tables),
        "rules": sum(len(t.rules) for t in tables),
    }


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from ..errors import FlowDefinitionError

    code = 0
    results: list[dict[str, Any]] = []
    for target in args.targets:
        try:
            flow = load_target(target)
        except FlowDefinitionError as exc:
            results.append({"target": target, "ok": False, "flow": exc.flow})
            results[-1]["problems"] = list(exc.problems)
            if not args.json:
                _print_problems(exc, out)
            code = max(code, 1)
            continue
        except CommandError as exc:  # one unloadable target must not hide the others' results
            print(f"flowkit: error: {exc}", file=sys.stderr)
            results.append({"target": target, "ok": False, "error": str(exc)})
            code = max(code, exc.code)
            continue
        counts = _summary(flow)
        results.append({"target": target, "ok": True, "flow": flow.name, **counts})
        if not args.json:
            out.write(
                f"OK {flow.name}: {counted(counts['nodes'], 'node')}, "
                f"{counted(counts['gates'], 'gate')}, "
                f"{counted(counts['final_states'], 'final state')}, "
                f"{counted(counts['route_tables'], 'route table')} "
                f"({counted(counts['rules'], 'rule')})\n"
            )
    if args.json:
        from ..terminal.output import write_json

        write_json(results, out)
    return code


def _cmd_workflows(args: argparse.Namespace, out: TextIO) -> int:
    from ..workflows import registered

    names = registered()
    if args.json:
        from ..terminal.output import write_json

        write_json(dict(sorted(names.items())), out)
        return 0
    width = max(map(len, names), default=0)
    for name, spec in sorted(names.items()):
        out.write(f"{name:<{width}}  {spec}\n")
    return 0
