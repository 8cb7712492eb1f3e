"""The versioned header and the ranking of ``kernelcv select``'s ``report.json``.

The report's layout is described by the JSON Schema ``docs/report.schema.json`` (and in
words in ``docs/report.md``). :func:`annotate` adds what a reader needs to trust and
reproduce a report without reading the code:

- ``schema_version`` (:data:`SCHEMA_VERSION`), ``kernelcv_version`` and ``argv`` (the
  command line, None when called from Python);
- ``C = 1 / (2 n lam)`` beside ``lam`` in every candidate (n = training rows; an
  rff search's candidates already carry the same value);
- ``trusted_error`` in every candidate -- the exact refit CV error where one was
  computed, else the criterion's score -- with ``trusted_source`` (``"exact"`` or
  ``"approximate"``) and ``trusted_rank`` (1 = the chosen candidate);
- ``ranking``: the candidates as short rows ordered by that value, the chosen one first.

``candidates`` keeps grid order (``best_index``, ``confirmed``, ``rechecked`` and
``refined`` are indices into it), so ``ranking[i]["index"]`` points back to the full row.
"""

from __future__ import annotations

from .._version import __version__
from ..selection.records import EXACT_STATUS

SCHEMA_VERSION = "1.4"  # 1.1: flagged, unconverged / ill_conditioned, the grid section;
# 1.2: uncertified (flagged and the candidates); 1.3: class_weight, sample_weight;
# 1.4: device
# Keys of a candidate that identify it in a ``ranking`` row.
_PARAMS = ("kernel", "gamma", "degree", "coef0", "lam", "C")


def kernelcv_version() -> str:
    """The running kernelcv's version (:data:`kernelcv.__version__`)."""
    return __version__


def lam_to_C(lam: float, n_samples: int) -> float:
    """``C = 1 / (2 n lam)``: the SVC-style cost of a lam on n training rows."""
    return 1.0 / (2.0 * n_samples * float(lam))


def _trusted(candidate):
    """(value, source): the exact refit CV error where computed, else the score."""
    if candidate.get("exact_error") is not None:
        return float(candidate["exact_error"]), EXACT_STATUS
    source = EXACT_STATUS if candidate.get("status") == EXACT_STATUS else "approximate"
    return float(candidate["score"]), source


def annotate(report: dict, argv=None) -> dict:
    """Add the schema header, ``C``, the trusted values and ``ranking`` to ``report``.

    ``report`` is :meth:`SearchResult.to_dict` (possibly extended); it is changed in
    place and returned. The order of ``ranking``: the chosen candidate, then candidates
    with an exact value by that value, then the others by their approximate score (ties:
    grid order). An approximate score is never ranked above an exact error: the search
    does not trust it there.
    """
    n = int(report["n_samples"])
    candidates = report["candidates"]
    best = report["best_index"]
    for c in candidates:
        c.setdefault("C", lam_to_C(c["lam"], n))
        c["trusted_error"], c["trusted_source"] = _trusted(c)

    def key(i):
        c = candidates[i]
        return (i != best, c["trusted_source"] != EXACT_STATUS, c["trusted_error"], i)

    order = sorted(range(len(candidates)), key=key)
    ranking = []
    for position, i in enumerate(order, start=1):
        c = candidates[i]
        c["trusted_rank"] = position
        ranking.append({"index": i, "trusted_rank": position,
                        **{k: c[k] for k in _PARAMS if k in c},
                        "trusted_error": c["trusted_error"],
                        "trusted_source": c["trusted_source"], "status": c["status"]})
    report["ranking"] = ranking
    header = {"schema_version": SCHEMA_VERSION, "kernelcv_version": kernelcv_version(),
              "argv": None if argv is None else [str(a) for a in argv]}
    rest = {k: v for k, v in report.items() if k not in header}
    report.clear()
    report.update(header)
    report.update(rest)
    return report
