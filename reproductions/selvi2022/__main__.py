"""``python -m reproductions.selvi2022``: see the package docstring and ``--help``."""

from reproductions.selvi2022 import main

if __name__ == "__main__":
    main()
