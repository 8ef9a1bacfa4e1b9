"""``python -m crowdprefs.web ROOT [--host H] [--port P]``: the judges' site of the project at
ROOT as a process of its own, without the command-line app (tests and benchmarks start it so).

The researcher token is read from ``--researcher-token-file`` or
``$CROWDPREFS_RESEARCHER_TOKEN`` (else a new one is made); the researcher page's link goes to
stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crowdprefs.errors import CrowdprefsError


def main(argv: list[str] | None = None) -> int:
    from crowdprefs.web.app import serve
    from crowdprefs.web.security import researcher_token

    parser = argparse.ArgumentParser(prog="python -m crowdprefs.web", description=__doc__)
    parser.add_argument("root", type=Path, help="the project folder")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument("--port", type=int, default=8000, help="TCP port to listen on")
    parser.add_argument(
        "--researcher-token-file", type=Path, help="a file whose first line is the token"
    )
    args = parser.parse_args(argv)
    try:
        serve(
            args.root,
            researcher_token(args.researcher_token_file),
            host=args.host,
            port=args.port,
            announce=lambda url: print(f"researcher page: {url}", file=sys.stderr),
        )
    except CrowdprefsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
