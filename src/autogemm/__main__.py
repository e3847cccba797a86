"""``python -m autogemm``: the command line without the installed script (``python -m autogemm.cli`` too)."""

from .cli import main

if __name__ == "__main__":
    main()
