from __future__ import annotations

import pytest

from icml26.papers.disempowerment import TfidfSchemaClassifier, labelled_bank


@pytest.fixture(scope="session")
def small_clf():
    recs, y = labelled_bank(500, 0, "train")
    return TfidfSchemaClassifier(seed=0).fit(recs, y)
