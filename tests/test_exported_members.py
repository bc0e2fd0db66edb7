"""The public names are a promise: adding one is a decision, removing one is a breaking change."""

from __future__ import annotations

import subprocess
import sys

import flowkit
import flowkit.errors
import flowkit.routing
import flowkit.stores
import flowkit.testing


def test_top_level_exports_are_locked() -> None:
    assert len(set(flowkit.__all__)) == len(flowkit.__all__)
    assert set(flowkit.__all__) == {
        "END",
        "Ask",
        "AsyncStream",
        "CachePolicy",
        "Checkpoint",
        "Completed",
        "Context",
        "Emitted",
        "Event",
        "Failed",
        "Fired",
        "Flow",
        "Gate",
        "Map",
        "Migration",
        "Node",
        "NodeError",
        "NodeFinished",
        "NodeStarted",
        "Parallel",
        "Pause",
        "Paused",
        "Reducer",
        "Resolution",
        "RetryPolicy",
        "Route",
        "RouteTable",
        "RunResult",
        "Runner",
        "StateChanged",
        "Stream",
        "Subflow",
        "ThreadPage",
        "ThreadSummary",
        "TokenStreamed",
        "Waiting",
        "__version__",
        "all_of",
        "always",
        "any_of",
        "append",
        "field",
        "mask_pii",
        "node",
        "not_",
        "reducer",
        "when",
    }
    for name in flowkit.__all__:
        assert getattr(flowkit, name) is not None


def test_every_error_is_a_flowkit_error() -> None:
    for name in flowkit.errors.__all__:
        assert issubclass(getattr(flowkit.errors, name), flowkit.errors.FlowkitError), name


def test_subpackages_export_what_users_import_by_path() -> None:
    assert {"JsonFileStore", "MemoryStore", "Store"} <= set(flowkit.stores.__all__)
    assert {"Route", "RouteTable", "field", "when", "END"} <= set(flowkit.routing.__all__)
    assert {"assert_routes", "capture_events", "StoreContract", "ScriptedLLM"} <= set(
        flowkit.testing.__all__
    )


def test_importing_flowkit_stays_light() -> None:
    code = (
        "import sys, flowkit; "
        "heavy = [m for m in ('httpx', 'lxml', 'xmlschema', 'pytest', 'hypothesis') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
