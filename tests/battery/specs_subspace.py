"""The battery's specs for ``attnlib.subspace``."""

from __future__ import annotations

import importlib

import numpy as np

from .core import (
    INVALID,
    VALID,
    Spec,
    _subspace_data,
)

MODULE = "subspace"


def specs():
    S = importlib.import_module("attnlib.subspace")

    X = lambda: _subspace_data()[0]  # noqa: E731
    C = lambda: S.self_expressive(X(), "lsr", 0.1)  # noqa: E731
    return {
        "subspace.ssc_objective": Spec(
            S.ssc_objective,
            lambda: dict(X=X(), C=C(), lam=0.1),
            {"X": "array", "C": "array", "lam": "positive"},
            group=("X", "C"),
        ),
        "subspace.self_expressive": Spec(
            lambda X, method, lam, solver, max_iter, tol: S.self_expressive(
                X, method, lam, solver=solver, max_iter=max_iter, tol=tol
            ),
            lambda: dict(
                X=X(),
                method="ssc",
                lam=0.05,
                solver="active_set",
                max_iter=200,
                tol=1e-6,
            ),
            {
                "X": "array",
                "method": "choice",
                "lam": "positive",
                "solver": "choice",
                "max_iter": "int",
                "tol": "positive",
            },
            optional=("lam",),
            sklearn=True,
            extra=[
                (
                    "lam per sample",
                    lambda a: a | dict(lam=np.full(len(a["X"]), 0.05)),
                    VALID,
                    "lam",
                ),
                (
                    "lam per sample, one negative",
                    lambda a: a | dict(lam=-np.ones(len(a["X"]))),
                    INVALID,
                    "lam",
                ),
            ]
            + [
                (f"method {m}", lambda a, m=m: a | dict(method=m, lam=0.1), VALID, "X")
                for m in ("lsr", "lrsc")
            ],
        ),
        "subspace.affinity": Spec(
            lambda C, normalize, keep: S.affinity(C, normalize=normalize, keep=keep),
            lambda: dict(C=C(), normalize="l2", keep=3),
            {"C": "array", "normalize": "choice", "keep": "int"},
            optional=("normalize", "keep"),
        ),
        "subspace.spectral_clustering": Spec(
            lambda A, n_clusters, assign_labels, eigen_solver: S.spectral_clustering(
                A,
                n_clusters,
                assign_labels=assign_labels,
                eigen_solver=eigen_solver,
            ),
            lambda: dict(
                A=S.affinity(C()),
                n_clusters=2,
                assign_labels="kmeans",
                eigen_solver="arpack",
            ),
            {
                "A": "array",
                "n_clusters": "int",
                "assign_labels": "choice",
                "eigen_solver": "choice",
            },
            extra=[
                ("all-zero A", lambda a: a | dict(A=0 * a["A"]), INVALID, "A"),
                (
                    "A not symmetric",
                    lambda a: a | dict(A=np.triu(a["A"])),
                    INVALID,
                    "A",
                ),
                ("A negative", lambda a: a | dict(A=-a["A"]), INVALID, "A"),
            ],
        ),
        "subspace.clustering_accuracy": Spec(
            S.clustering_accuracy,
            lambda: dict(
                y_true=np.array([0, 0, 1, 1, 2]), y_pred=np.array([1, 1, 0, 2, 2])
            ),
            {"y_true": "labels", "y_pred": "labels"},
            group=("y_true", "y_pred"),
        ),
        "subspace.SubspaceClustering": Spec(
            lambda n_clusters, method, lam, X: S.SubspaceClustering(
                n_clusters, method=method, lam=lam
            ).fit_predict(X),
            lambda: dict(n_clusters=2, method="ssc", lam=0.05, X=X()),
            {"n_clusters": "int", "method": "choice", "lam": "positive", "X": "array"},
            optional=("lam",),
            sklearn=True,
        ),
    }
