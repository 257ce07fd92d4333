"""Methods: the registered ways of solving a bound DRO instance, and ``method="auto"`` (issue 22, step 2).

Each built-in method is one module here, holding its compile step (or a pointer to the reformulation it compiles,
in :mod:`drokit.reformulations`), when it refuses an instance, and the ``auto`` rules that choose it;
:mod:`.registry` holds the :class:`Method` and :class:`AutoRule` types and the registry, :mod:`.auto` the choice and
the compile step every fit goes through.  A method of your own is a :class:`Method` passed to
:func:`register_method` (``docs/architecture.md``, "Adding a method").
"""

from .registry import (DRIVERS, AutoRule, Method, always_eligible, auto_rules, describe_methods, get_method,
                       method_names, refusal_of, register_method, unregister_method)
# the built-in methods register themselves, in this order (the order of ``method_names()``)
from .erm import compile_erm
from .closed_form import compile_closed_form
from .monolithic import MAX_CONFIGURATIONS, MONOLITHIC_AUTO_LIMIT, compile_monolithic
from .cutting_plane import compile_cutting_plane, tangent_loss_with_structured_path
from .box import box_auto_rows
from . import graph, intersection, mot  # noqa: F401  (they register themselves)
from .auto import choose_method, compile_instance, eligible_methods

__all__ = ["Method", "AutoRule", "DRIVERS", "register_method", "unregister_method", "get_method", "method_names",
           "auto_rules", "describe_methods", "always_eligible", "refusal_of", "choose_method", "compile_instance",
           "eligible_methods", "compile_erm", "compile_closed_form", "compile_monolithic", "compile_cutting_plane",
           "tangent_loss_with_structured_path", "box_auto_rows", "MAX_CONFIGURATIONS", "MONOLITHIC_AUTO_LIMIT"]
