"""``python -m autogemm.cli``: the command line without the installed script, as ``python -m autogemm``."""

from . import main

if __name__ == "__main__":
    main()
