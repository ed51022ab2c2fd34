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


def load_bandit(dataset: str | None = None, /, seed: Any = None, **kwargs: Any) -> ContextualBandit:
    """The classification bandit of ``dataset`` (one of :data:`DATASETS`, positional); ``kwargs``
    go to ``from_classification`` (standardize, bias, scale, and ``name``: the bandit's label,
    the dataset's name by default). ``load_bandit(name="wine")``, the dataset given by keyword,
    is read as before (``load_bandit("wine", name="x")`` was Python's TypeError "multiple values
    for argument 'name'": the dataset's parameter was called ``name``)."""
    if dataset is None:
        if "name" not in kwargs:
            raise TypeError(f"load_bandit() needs a dataset, one of {', '.join(DATASETS)}")
        dataset = kwargs.pop("name")  # the dataset by its former keyword
    check_choice(dataset, tuple(DATASETS), "dataset")
    kwargs.setdefault("name", dataset)
    try:
        from sklearn import datasets
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"the {dataset!r} bandit needs scikit-learn: pip install 'privrl[datasets]'") from e
    X, y = getattr(datasets, DATASETS[dataset])(return_X_y=True)
    return ContextualBandit.from_classification(X, y, seed=seed, **kwargs)


def classification_bandit(dataset: str, seed: int | None = None) -> ContextualBandit:
    """:func:`load_bandit` under the sweep registry's name ``ClassificationBandit`` (configs:
    ``env = { name = "ClassificationBandit", dataset = "digits" }``)."""
    return load_bandit(dataset, seed=seed)
