"""``python -m admit.cli``: the ``admit`` command."""

from admit.cli import main

main()
