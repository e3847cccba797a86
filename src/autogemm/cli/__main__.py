"""``python -m autogemm.cli``: the command line without the installed script."""

from . import main

main()
