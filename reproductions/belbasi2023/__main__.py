"""``python -m reproductions.belbasi2023``: see the package docstring and ``--help``."""

from reproductions.belbasi2023 import main

if __name__ == "__main__":
    main()
