"""``python -m streamops``: the command line (:mod:`streamops.cli`)."""

from streamops.cli import main

raise SystemExit(main())
