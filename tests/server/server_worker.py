"""A server process for the load and restart tests: ``python server_worker.py STORE PORT``.

Serves the test flows over a JSON-file store (fsync on), token from FLOWKIT_SERVER_TOKEN.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import uvicorn
from serve_flows import chat, counter

from flowkit.server import create_app
from flowkit.stores import JsonFileStore


def main() -> None:
    store, port = sys.argv[1], int(sys.argv[2])
    app = create_app([counter, chat], store=JsonFileStore(store))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
