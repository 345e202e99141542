"""Fixtures of the Tutor tests: the real multilingual classifier, loaded once per module."""

from __future__ import annotations

import pytest

from metnos.features.tutor.classify import Classifier


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return Classifier()
