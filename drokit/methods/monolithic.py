"""``monolithic``: every categorical configuration enumerated in one conic program (belbasi2023 Obs. 1, sun2025 Thm 1).

Exact, exponential in the number of mutable categorical features: refused above ``max_configurations`` rows
(:func:`drokit.oracles.rows.check_enumeration_size`), and chosen by ``auto`` only up to
:data:`MONOLITHIC_AUTO_LIMIT` rows, above which one big exponential-cone program is fragile
(``docs/method_selection.md``).
"""

from __future__ import annotations

from typing import Optional

from ..reformulations.dual import CompiledProgram, build_dual_program
from ..exceptions import DrokitError
from ..instance import DROInstance
from ..oracles.enumeration import count_configuration_rows, enumerate_configurations
from ..oracles.rows import check_enumeration_size
from .registry import AutoRule, Method, refusal_of, register_method

#: default limit on enumerated configuration rows (monolithic program, enumeration oracle)
MAX_CONFIGURATIONS = 1_000_000
#: "auto" chooses the monolithic program only below this many rows (it is fragile above, see
#: benchmarks/RESULTS.md), the cutting plane otherwise
MONOLITHIC_AUTO_LIMIT = 2_000


def monolithic_refusal(inst: DROInstance, max_configurations: int = MAX_CONFIGURATIONS) -> Optional[DrokitError]:
    """A :class:`~drokit.ProblemTooLargeError` above ``max_configurations`` rows."""
    return refusal_of(lambda: check_enumeration_size(inst, "monolithic", max_configurations))


def compile_monolithic(inst: DROInstance, max_configurations: int = MAX_CONFIGURATIONS) -> CompiledProgram:
    """The dual program of :mod:`drokit.reformulations.dual` over every configuration row."""
    size = check_enumeration_size(inst, "monolithic", max_configurations)
    rows = enumerate_configurations(inst)
    why = (f"{inst.n_categorical} categorical features with {inst.mutable_configurations():,} "
           f"configurations: full enumeration, {size:,} configuration rows "
           f"(<= max_configurations={max_configurations:,}; belbasi2023 Obs. 1, sun2025 Thm 1)")
    return CompiledProgram(build_dual_program(inst, rows), "monolithic", why, rows.size)


def _tiny_enumeration(inst: DROInstance, max_configurations: int) -> Optional[str]:
    size = count_configuration_rows(inst)
    if size <= min(MONOLITHIC_AUTO_LIMIT, max_configurations):
        return f"full enumeration is tiny ({size:,} rows <= {MONOLITHIC_AUTO_LIMIT:,})"
    return None


MONOLITHIC = register_method(
    Method("monolithic", compile_monolithic, "every configuration enumerated in one program (belbasi2023 Obs. 1)",
           refusal=monolithic_refusal),
    auto=(AutoRule("monolithic", 40, _tiny_enumeration),))
