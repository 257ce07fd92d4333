"""``python -m reproductions.sun2025``: see the package docstring and ``--help``."""

from reproductions.sun2025 import main

if __name__ == "__main__":
    main()
