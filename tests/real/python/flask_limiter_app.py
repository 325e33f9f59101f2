"""A Flask app behind Flask-Limiter, served by waitress, for tests/real/flask_limiter.rs.

Every request to / counts against one key (as if all clients sent the same API token), under
the limits given on the command line; /ready is exempt, so the harness can ask whether the
server is up without spending any of the allowance. Flask's own server handles one request at
a time, which would queue twelve client threads behind each other, so waitress serves it with
16 threads.

Once listening it prints one JSON line: the port and the versions of the packages under test.
It exits when its standard input closes (the test that started it is gone) or on SIGTERM.

    python flask_limiter_app.py --port 8080 --strategy moving-window \
        --limits '5 per 1 second; 20 per 10 seconds'
"""

import argparse
import importlib.metadata
import json
import os
import signal
import sys
import threading

from flask import Flask
from flask_limiter import Limiter
from waitress import create_server

STRATEGIES = ("fixed-window", "moving-window", "sliding-window-counter")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--strategy", choices=STRATEGIES, required=True)
    parser.add_argument(
        "--limits",
        required=True,
        help="one or more limits in the limits package's notation, separated by ';'",
    )
    return parser.parse_args()


def build_app(strategy, limits):
    app = Flask(__name__)
    limiter = Limiter(
        # One key for everyone: the clients share one token, not one address.
        key_func=lambda: "token",
        app=app,
        strategy=strategy,
        headers_enabled=True,
        storage_uri="memory://",
        default_limits=[limits],
    )

    @app.route("/")
    def index():
        return "ok\n"

    @app.route("/ready")
    @limiter.exempt
    def ready():
        return "", 204

    return app


def exit_when_stdin_closes():
    """The parent holds our stdin open; when it dies, read() returns and we go too."""
    sys.stdin.buffer.read()
    os._exit(0)


def main():
    args = parse_args()
    app = build_app(args.strategy, args.limits)
    server = create_server(app, host="127.0.0.1", port=args.port, threads=16)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    versions = {
        name: importlib.metadata.version(name)
        for name in ("Flask-Limiter", "limits", "Flask", "waitress")
    }
    print(json.dumps({"port": args.port, "versions": versions}), flush=True)
    server.run()


if __name__ == "__main__":
    main()
