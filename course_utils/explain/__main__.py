"""``python -m course_utils.explain config.json [--plot layers.png]``."""

import sys

from .cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
