"""What a panel's fold is: the part of the dashboard's model one panel keeps, fed each sample of its entity kinds.

:class:`~zfsmon.views.top.state.TopState` keeps the window and what every panel shares (the entities, each one's
newest samples and derived rates, staleness, errors, the vdev tree) and one fold per panel that keeps more (its
sparkline series, its per-interval counts), feeding them in one loop. A fold is pure, as the state is: samples in,
values out. It reads the shared part through :class:`StateView` (the state's own methods), so that this package
sits below the state module and the state can list the folds without an import cycle.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import ClassVar, Deque, Dict, List, Optional, Protocol, Sequence, Tuple, TypeVar

from zfsmon.model import Derived, Entity, Event, EventKind, Kind, Sample

Point = Tuple[float, float]
#: a sample's derived values as its folds see them (the sampler's, or for a recording's records the state's
#: :class:`~zfsmon.analysis.rates.Deriver`'s): None for no derivation, a first reading or one after a reset
Derivation = Optional[Derived]
F = TypeVar("F", bound="Fold")


class StateView(Protocol):
    """The shared part of the model a fold's values are read with (:class:`~zfsmon.views.top.state.TopState`)."""

    entities: Dict[str, Entity]
    derived: Dict[str, Dict[str, float]]

    def window(self) -> Tuple[float, float]: ...

    def window_events(self, kinds: Optional[Sequence[EventKind]] = None) -> List[Event]: ...

    def values(self, key: str) -> Tuple[Dict[str, float], bool]: ...

    def newest(self, key: str) -> Optional[Sample]: ...


class Fold:
    """One panel's state: ``id`` is its panel's, ``kinds`` the entity kinds whose samples it is fed (interval
    samples only: not the since-import reports, not the status source's health samples).

    ``series`` holds its sparkline points by (entity key or alias, metric), as
    :meth:`~zfsmon.views.top.state.TopState.spark` reads them; the state trims every fold to the time it keeps.
    """

    id: ClassVar[str] = ""
    kinds: ClassVar[Tuple[Kind, ...]] = ()

    def __init__(self) -> None:
        self.series: Dict[Tuple[str, str], Deque[Point]] = {}

    def feed(self, s: Sample, derived: Derivation) -> None:
        """Fold one sample in (``derived``: its derived values)."""
        raise NotImplementedError

    def push(self, key: str, metric: str, ts: float, value: float) -> None:
        q = self.series.get((key, metric))
        if q is None:
            q = self.series[(key, metric)] = deque()
        q.append((ts, float(value)))

    def trim(self, lo: float) -> None:
        """Forget what is older than ``lo``; a fold with more than its series trims that too."""
        for q in self.series.values():
            while q and q[0][0] < lo:
                q.popleft()

    def copy(self: F) -> F:
        """An independent fold at the same point (replay keeps the states around its cursor): every container
        copied one level down, the points and records in them shared, being immutable."""
        new = copy.copy(self)
        for name, v in vars(self).items():
            if isinstance(v, (deque, dict, list)):
                setattr(new, name, copied(v))
        return new


def copied(v: object) -> object:
    """A container copied one level down (a dict's deques and dicts too): what the state's and a fold's
    ``copy`` need."""
    if isinstance(v, deque):
        return deque(v)
    if isinstance(v, list):
        return list(v)
    if isinstance(v, dict):
        return {k: copied(x) if isinstance(x, (deque, dict, list)) else x for k, x in v.items()}
    return v
