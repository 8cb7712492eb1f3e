"""Checkpoint fingerprints are pinned: a refactor must not orphan users' checkpoint files.

The values were recorded before the criteria became objects (issue 16); a change here means
every existing checkpoint would be refused on resume.

Issue 14: l2svm, svm and svr fit an intercept by default. The checkpoints pinned here were
made with the bias-free machines, so their options now say ``fit_intercept=False``: the
same search, the same fingerprint (the configuration recorded ``fit_intercept: false``
before). The rff pin changed: that search always had an intercept (feature-space model,
SVC refits and final SVC) but recorded the machine's flag ``fit_intercept: false``; the
default svm now records ``true`` (and svm without intercept is refused by rff), so a
pre-issue-14 rff checkpoint is refused on resume and the search reruns.
"""

import json

import numpy as np
import pytest

from flat_options import as_objects
from kernelcv import Execution, Safeguards, grid_search

PINNED = [
    (dict(machine="l2svm", method="bif", gammas=[0.1, 1.0], lams=[0.01, 0.1], folds=5,
          fit_intercept=False),
     "2f297ce62524b5e2b96fa96e018af6938f5ec2349efd8b5406047267550a14b3"),
    (dict(machine="krr", gammas=[0.5], lams=[0.1], folds=4, random_state=3),
     "759fdee1ee28ed3a374590f3d2496d6661fda7ed41efb760e5e9a45fd2881e14"),
    (dict(machine="svm", method="rff", gammas=[0.5], lams=[0.1], folds=5, features=20),
     # was 832c5f19e6d2707e31ab46e38631616e473e039c2c8c30eb636b0adf3dc07099 before issue 14
     # (the recorded machine flag fit_intercept changed from false to true, see above)
     "d08f14becc76c32b627973d3c070eadd635fa8a949c66092a00afa3e94d2ab68"),
    (dict(machine="svm", method="bif", folds="auto", epsilon=0.5, gammas=[0.5], lams=[0.1],
          fit_intercept=False),
     "e683d9f6814b513975c9eaeb0043617d24c656abb06cd803a80f709042e42122"),
]


def _data():
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(40, 3)), 3)
    y = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("options,expected", PINNED, ids=["bif", "closed-form", "rff", "auto"])
def test_checkpoint_fingerprint_is_pinned(tmp_path, options, expected):
    X, y = _data()
    path = tmp_path / "search.jsonl"
    options = dict(options)
    machine, options = as_objects(options.pop("machine"), options)
    grid_search(X, y, machine, **options, safeguards=Safeguards(confirm=0),
                execution=Execution(checkpoint=str(path)))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["fingerprint"] == expected
