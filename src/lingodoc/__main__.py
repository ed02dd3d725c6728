"""``python -m lingodoc``: the ``lingodoc`` command (see ``lingodoc.cli``)."""

import sys

from lingodoc.cli import main

if __name__ == "__main__":
    sys.exit(main())
