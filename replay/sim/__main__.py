"""`python -m replay.sim [options]`: the simulator as a child process (what embedded.py launches).

Same options as `trajbench serve-sim` (both come from `config.OPTIONS`). When the server accepts
requests it prints one JSON line `{"base_url": ..., "simulated": true}` to stdout, which the
launcher waits for. `--parent-pid PID` (the launcher's own option) ties the process's life to
the launcher's (`lifeline`): it stops when that process ends, however it ends.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import lifeline
from .config import OPTIONS, config_from_options
from .errors import SimError
from .server import serve


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m replay.sim", description="trajbench's simulated OpenAI-compatible endpoint."
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 = a free port (printed on the ready line)")
    p.add_argument(
        "--parent-pid",
        type=int,
        default=None,
        help="stop when this process ends (set by the launcher, with stdin a pipe it holds)",
    )
    for opt in OPTIONS:
        p.add_argument(
            f"--{opt.name}",
            dest=opt.dest,
            type=opt.kind,
            choices=opt.choices,
            metavar=opt.metavar,
            default=None,
            help=opt.help,
        )
    return p


def main(argv: list[str] | None = None) -> None:
    args = vars(parser().parse_args(argv))
    host, port, parent = args.pop("host"), args.pop("port"), args.pop("parent_pid")
    if parent is not None:
        lifeline.arm(parent)
    try:
        config = config_from_options(args)

        def ready(base_url: str) -> None:
            print(json.dumps({"base_url": base_url, "simulated": True}), flush=True)

        serve(config, host, port, ready)
    except SimError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
