"""Classification datasets as contextual bandits (the supervised-to-bandit reduction of
:meth:`privrl.envs.bandit.ContextualBandit.from_classification`), from scikit-learn's bundled
datasets: install the optional extra ``pip install privrl[datasets]``."""

from __future__ import annotations

from typing import Any

from privrl.common.checks import check_choice
from privrl.envs.bandit import ContextualBandit

__all__ = ["DATASETS", "classification_bandit", "load_bandit"]

#: name -> scikit-learn loader: digits (1,797 x 64, 10 classes), wine (178 x 13, 3), breast
#: cancer (569 x 30, 2).
DATASETS = {"digits": "load_digits", "wine": "load_wine", "breast_cancer": "load_breast_cancer"}


def load_bandit(name: str, seed: Any = None, **kwargs: Any) -> ContextualBandit:
    """The classification bandit of dataset ``name`` (one of :data:`DATASETS`); ``kwargs`` go to
    ``from_classification`` (standardize, bias, scale)."""
    check_choice(name, tuple(DATASETS), "dataset")
    try:
        from sklearn import datasets
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"the {name!r} bandit needs scikit-learn: pip install 'privrl[datasets]'") from e
    X, y = getattr(datasets, DATASETS[name])(return_X_y=True)
    return ContextualBandit.from_classification(X, y, seed=seed, name=name, **kwargs)


def classification_bandit(dataset: str, seed: int | None = None) -> ContextualBandit:
    """:func:`load_bandit` under the sweep registry's name ``ClassificationBandit`` (configs:
    ``env = { name = "ClassificationBandit", dataset = "digits" }``)."""
    return load_bandit(dataset, seed=seed)
