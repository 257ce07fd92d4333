"""Loading the scripts of ``examples/`` and running a ``main`` (an example's or a reproduction's) from the tests.

The paper reproductions are the package ``reproductions/`` (imported directly by their tests, the repository
root being on ``sys.path`` under ``python -m pytest``); ``examples/`` keeps short scripts a user copies.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Sequence

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example(stem: str):
    """``examples/<stem>.py`` as the module ``stem``, with ``examples/`` on ``sys.path`` as when the script
    runs.  The module is registered in ``sys.modules`` first: dataclasses and pickling look it up by name."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    if stem in sys.modules:
        return sys.modules[stem]
    spec = importlib.util.spec_from_file_location(stem, EXAMPLES / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module
    spec.loader.exec_module(module)
    return module


def timed_main(module, args: Sequence[str], out: Path):
    """``module.main([*args, "--out", out])`` (an example script, or a reproduction package such as
    ``reproductions.selvi2022``); the result gets ``wall``, its wall-clock seconds."""
    started = time.perf_counter()
    result = module.main([*args, "--out", str(out)])
    result.wall = time.perf_counter() - started
    return result
