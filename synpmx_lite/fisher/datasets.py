"""The datasets of the Fisher-information chapter, from files that ship with scikit-learn.

Nothing is downloaded: :func:`sklearn.datasets.load_digits`, ``load_diabetes`` and
``load_breast_cancer`` read data bundled in the scikit-learn package. Each loader splits the
examples once into a training and a test set (80:20 by default) with a seeded permutation, and
learns every transformation (scaling, principal components) on the training set alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn import datasets
from sklearn.decomposition import PCA

from .._validation import check_count, check_real, check_rng

__all__ = ["FisherData", "breast_cancer_data", "diabetes_data", "digits_data"]


@dataclass(frozen=True)
class FisherData:
    """A dataset split into training and test examples.

    Attributes
    ----------
    X_train, y_train : numpy.ndarray
        Training features ``(n, d)`` and labels ``(n,)``.
    X_test, y_test : numpy.ndarray
        Test features and labels, transformed as the training set was.
    feature_names : tuple of str
        Name of each column of ``X_train``.
    images_train : numpy.ndarray or None
        For the digits, the ``(n, 8, 8)`` original image of each training example.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: tuple[str, ...]
    images_train: np.ndarray | None = None


def _split(size: int, test_fraction: float, rng: object) -> tuple[np.ndarray, np.ndarray]:
    test_fraction = check_real(test_fraction, "test_fraction", low=0, high=1, high_open=True)
    order = check_rng(rng).permutation(size)
    train = size - round(test_fraction * size)
    return np.sort(order[:train]), np.sort(order[train:])


def _standardise(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centre, scale = train.mean(axis=0), train.std(axis=0, ddof=1)
    return (train - centre) / scale, (test - centre) / scale


def digits_data(*, components: int = 20, test_fraction: float = 0.2, rng: object = 0) -> FisherData:
    """Handwritten digits 0 and 1, in the unit ball and on their top principal components.

    The 8 x 8 images of the two digits (360 of them) are scaled by the largest norm among
    the training images, so that every training image lies in the unit ball, then projected
    on the training set's top ``components`` principal components, as Hannun, Guo and van
    der Maaten (2021) do with MNIST.

    Parameters
    ----------
    components : int, default 20
        Principal components kept, between 1 and 64.
    test_fraction : float, default 0.2
        Share of the examples held out for testing, in [0, 1).
    rng : numpy.random.Generator, int or None, default 0
        Source of the split.

    Returns
    -------
    FisherData
        Labels 0 (digit zero) and 1 (digit one); ``images_train`` holds the training images.
    """
    components = check_count(components, "components")
    if components > 64:
        raise ValueError(f"components must be at most 64 (the pixels), got {components}")
    digits = datasets.load_digits()
    keep = digits.target < 2
    images, labels = digits.images[keep], digits.target[keep].astype(float)
    pixels = images.reshape(len(images), -1)
    train, test = _split(len(labels), test_fraction, rng)
    scale = np.linalg.norm(pixels[train], axis=1).max()
    pca = PCA(n_components=components, svd_solver="full").fit(pixels[train] / scale)
    return FisherData(
        X_train=pca.transform(pixels[train] / scale),
        y_train=labels[train],
        X_test=pca.transform(pixels[test] / scale),
        y_test=labels[test],
        feature_names=tuple(f"pc{k + 1}" for k in range(components)),
        images_train=images[train],
    )


def diabetes_data(*, test_fraction: float = 0.2, rng: object = 0) -> FisherData:
    """The diabetes data of Efron et al. (2004): 442 patients, disease progression after a year.

    Sex, coded 1 and 2 in the source (which code is which sex is not documented), becomes a
    0/1 indicator (1 for code 2) in column 1; the nine numeric features (age, body-mass
    index, blood pressure and six blood serum measurements) and the label are standardised to
    mean 0 and standard deviation 1 on the training set; with the label centred, the linear
    model needs no intercept.

    Parameters
    ----------
    test_fraction : float, default 0.2
        Share of the patients held out for testing, in [0, 1).
    rng : numpy.random.Generator, int or None, default 0
        Source of the split.

    Returns
    -------
    FisherData
        Columns ``age, sex, bmi, bp, s1, ..., s6``; real labels for linear regression.
    """
    source = datasets.load_diabetes(scaled=False)
    features, target = source.data.copy(), source.target.astype(float)
    train, test = _split(len(target), test_fraction, rng)
    numeric = np.arange(features.shape[1]) != 1
    features[:, 1] = features[:, 1] == 2
    X_train, X_test = features[train], features[test]
    X_train[:, numeric], X_test[:, numeric] = _standardise(X_train[:, numeric], X_test[:, numeric])
    y_train, y_test = _standardise(target[train, None], target[test, None])
    return FisherData(
        X_train=X_train,
        y_train=y_train[:, 0],
        X_test=X_test,
        y_test=y_test[:, 0],
        feature_names=tuple(source.feature_names),
    )


def breast_cancer_data(*, test_fraction: float = 0.2, rng: object = 0) -> FisherData:
    """The Wisconsin diagnostic breast-cancer data: 569 tumours, 30 features of cell nuclei.

    The features are standardised on the training set.

    Parameters
    ----------
    test_fraction : float, default 0.2
        Share of the tumours held out for testing, in [0, 1).
    rng : numpy.random.Generator, int or None, default 0
        Source of the split.

    Returns
    -------
    FisherData
        Labels 0 (malignant) and 1 (benign), scikit-learn's coding, for logistic regression.
    """
    source = datasets.load_breast_cancer()
    train, test = _split(len(source.target), test_fraction, rng)
    X_train, X_test = _standardise(source.data[train], source.data[test])
    labels = source.target.astype(float)
    return FisherData(
        X_train=X_train,
        y_train=labels[train],
        X_test=X_test,
        y_test=labels[test],
        feature_names=tuple(source.feature_names),
    )
