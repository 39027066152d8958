"""``python -m memreader.cli``: the ``memreader`` command."""

from memreader.cli import main

raise SystemExit(main())
