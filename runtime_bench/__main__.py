"""`python -m runtime_bench …`: the same as `arena bench …`."""

import logging
import sys

from runtime_bench.cli import main

if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        sys.exit(main(sys.argv[1:], prog="python -m runtime_bench"))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
