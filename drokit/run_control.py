"""What one fit may spend, what it shows while it runs, and the record of every solver attempt.

A :class:`RunControl` goes with one call of :meth:`drokit.CompiledProblem.solve` (the estimators' ``fit``):

- ``time_limit`` (seconds of wall time, ``None`` for none): the methods check :meth:`RunControl.should_stop`
  between their steps (phase 1's smoothed solves, the barrier master's centerings, the cutting plane's
  rounds) and a conic solve gets the time left as its own limit (:meth:`RunControl.solver_options`); the fit
  then ends with the best point found and its certified bounds;
- an interrupt (Ctrl-C, ``SIGINT``) during a cutting-plane fit stops it the same way at the next step, with
  the best model so far and its bounds; a second Ctrl-C raises at once.  A conic solve in progress
  finishes first (the solvers do not poll for interrupts);
- ``verbose``: 0 silent (the default, as in scikit-learn); 1 progress lines on stderr -- phase, round,
  the certified gap closing, elapsed time and an estimate of the rest -- once a fit has run
  :data:`PROGRESS_AFTER` seconds, in place on a terminal; 2 also the method's log (every phase-1 solve,
  barrier centering and cutting-plane round); 3 also the conic solver's own log;
- :attr:`RunControl.attempts`: every solver call with its settings, status and seconds, retries and
  fallbacks included, so that the fit's record accounts for all of its time.
"""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from .exceptions import ParameterError

#: seconds a fit runs before its first progress line (``verbose=1``): short fits stay silent
PROGRESS_AFTER = 2.0
#: off a terminal, at most one progress line per this many seconds (phase changes always show)
PROGRESS_EVERY = 5.0


def check_time_limit(time_limit: Any) -> Optional[float]:
    """``time_limit`` as a float, or ``None``; a clear error for anything but a positive finite number."""
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.integer, np.floating)):
        raise ParameterError(f"time_limit must be None or a positive number of seconds, got {time_limit!r}")
    value = float(time_limit)
    if not (math.isfinite(value) and value > 0):
        raise ParameterError(f"time_limit must be None or a positive number of seconds, got {time_limit!r}")
    return value


def check_verbose(verbose: Any) -> int:
    """``verbose`` as an int level 0-3 (``True`` is 1, ``False`` 0)."""
    if isinstance(verbose, (bool, np.bool_)):
        return int(verbose)
    if isinstance(verbose, (int, np.integer)) and verbose >= 0:
        return min(int(verbose), 3)
    raise ParameterError(f"verbose must be a bool or an int >= 0 (0 silent, 1 progress, 2 the method's log, "
                         f"3 also the solver's log), got {verbose!r}")


class RunControl:
    """The time limit, interrupt flag, progress display and attempt record of one fit (module docstring)."""

    def __init__(self, time_limit: Optional[float] = None, verbose: Any = 0, stream=None):
        self.time_limit = check_time_limit(time_limit)
        self.verbose = check_verbose(verbose)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.attempts: List[Dict[str, Any]] = []
        self.interrupted = False
        self.stop_reason: Optional[str] = None
        self._shown = False
        self._last_line = -math.inf
        self._last_phase = None

    # ------------------------------------------------------------------ time
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def remaining(self) -> float:
        """Seconds left (``inf`` without a limit; never negative)."""
        if self.time_limit is None:
            return math.inf
        return max(0.0, self.time_limit - self.elapsed())

    def should_stop(self) -> bool:
        """True once the time limit has passed or an interrupt arrived; sets :attr:`stop_reason`."""
        if self.stop_reason is None:
            if self.interrupted:
                self.stop_reason = "interrupted"
            elif self.time_limit is not None and self.elapsed() >= self.time_limit:
                self.stop_reason = f"time limit of {self.time_limit:g} s reached"
        return self.stop_reason is not None

    def solver_options(self, backend, options: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """``options`` with the backend's own time limit set to the time left, unless the user set one."""
        merged = dict(options or {})
        if self.time_limit is not None:
            for key, value in backend.time_limit_options(max(self.remaining(), 1e-3)).items():
                merged.setdefault(key, value)
        return merged

    # ------------------------------------------------------------- interrupts
    def interruptible(self) -> "_GracefulInterrupt":
        """A context in which the first Ctrl-C sets :attr:`interrupted` instead of raising (the method stops
        at its next step with its best point); the second raises ``KeyboardInterrupt`` as usual.  Outside the
        main thread (no signal handlers there) it changes nothing."""
        return _GracefulInterrupt(self)

    # --------------------------------------------------------------- display
    def log(self, message: str) -> None:
        """The method's log line (``verbose >= 2``)."""
        if self.verbose >= 2:
            self._clear()
            print(message, file=self.stream, flush=True)

    @property
    def solver_verbose(self) -> bool:
        return self.verbose >= 3

    def progress(self, phase: str, message: str) -> None:
        """A progress line ``[drokit] <elapsed> <phase>: <message>`` (``verbose == 1``, after
        :data:`PROGRESS_AFTER` seconds; in place on a terminal, else at phase changes and every
        :data:`PROGRESS_EVERY` seconds)."""
        if self.verbose != 1:
            return
        now = self.elapsed()
        if now < PROGRESS_AFTER:
            return
        text = f"[drokit] {now:7.1f} s  {phase}: {message}"
        if self.tty:
            self._write("\r" + text + "\x1b[K")
        elif phase != self._last_phase or now - self._last_line >= PROGRESS_EVERY:
            self._write(text + "\n")
            self._last_line = now
        else:
            return
        self._shown, self._last_phase = True, phase

    def finish(self, message: str) -> None:
        """The closing line, when a progress line was shown."""
        if self.verbose == 1 and self._shown:
            self._write(("\r" if self.tty else "") + f"[drokit] {message}" + ("\x1b[K" if self.tty else "") + "\n")
            self._shown = False

    def _clear(self) -> None:
        if self.tty and self._shown:
            self._write("\r\x1b[K")

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    # --------------------------------------------------------------- record
    def record(self, stage: str, solver: str, settings: Mapping[str, Any], status: str, raw_status: str,
               seconds: float, iterations: int = 0) -> None:
        """One solver call: which stage asked for it, the solver and settings, its status and time."""
        self.attempts.append({"stage": stage, "solver": solver, "settings": dict(settings), "status": status,
                              "raw_status": raw_status, "seconds": float(seconds), "iterations": int(iterations)})


class _GracefulInterrupt:
    """:meth:`RunControl.interruptible` (a first ``SIGINT`` only sets a flag)."""

    def __init__(self, control: RunControl):
        self.control = control
        self.previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
        return self.control

    def _handle(self, signum, frame):
        if self.control.interrupted:          # the second Ctrl-C: stop at once
            raise KeyboardInterrupt
        self.control.interrupted = True
        self.control.log("interrupt: stopping at the next step with the best model so far "
                         "(press Ctrl-C again to abort at once)")

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def estimate_rest(gaps: List[float], seconds: List[float], tol: float) -> Optional[str]:
    """A rough ``"~3 rounds, ~12 s"`` from the last rounds' relative gaps (geometric decrease) and times, or
    ``None`` when the gaps do not (yet) shrink."""
    finite = [(g, s) for g, s in zip(gaps, seconds) if math.isfinite(g) and g > 0]
    if len(finite) < 2 or finite[-1][0] <= tol:
        return None
    (g0, _), (g1, _) = finite[-2], finite[-1]
    if g1 >= 0.95 * g0:
        return None
    rounds = max(1, math.ceil(math.log(g1 / tol) / math.log(g0 / g1)))
    per_round = float(np.mean([s for _, s in finite[-3:]]))
    return f"~{rounds} more round{'s' if rounds > 1 else ''}, ~{rounds * per_round:.0f} s"
