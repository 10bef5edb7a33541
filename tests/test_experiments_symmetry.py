"""Tests of chapter 06's learning-curve scaffolding (attnlib.experiments.symmetry)."""

import math

import numpy as np
import pytest
import torch
from scipy.special import softmax
from sklearn.linear_model import Ridge

from attnlib.experiments.symmetry import (
    LEARNERS,
    MeanBaseline,
    RidgeBaseline,
    SequenceMLP,
    fit_and_score,
    knowledge_task,
    make_teacher,
    relative_error,
    sample_efficiency,
    sequences_needed,
)
from attnlib.symmetry import KnowledgeAttention, equivariance_error

# The tensors here are tiny: one thread (conftest's fixture) for every test.
pytestmark = pytest.mark.usefixtures("one_thread")


def test_fit_and_score_learns_the_teacher_and_mlp_refuses_other_lengths():
    teacher = make_teacher(4, 2, seed=0)
    data = knowledge_task(teacher, 8, 5, seed=1)
    tests = {
        "n5": knowledge_task(teacher, 16, 5, seed=2),
        "n9": knowledge_task(teacher, 16, 9, seed=3),
    }
    torch.manual_seed(0)
    scores = fit_and_score(KnowledgeAttention(4, 2), data, tests, n_steps=80, lr=3e-2)
    assert scores["n5"] < 0.05 and scores["n9"] < 0.05
    mlp_scores = fit_and_score(SequenceMLP(5, 4, hidden=8), data, tests, n_steps=2)
    assert math.isnan(mlp_scores["n9"]) and not math.isnan(mlp_scores["n5"])


@pytest.mark.parametrize("kernel", ["quadratic", "rbf"])
def test_teachers_are_equivariant_with_knowledge(kernel):
    teacher = make_teacher(5, 3, kernel=kernel, seed=0).double()
    X, Y = knowledge_task(teacher, 3, 4, seed=0)
    assert X.dtype == torch.float64 and Y.shape == (3, 4, 5)
    g = torch.Generator().manual_seed(0)
    assert equivariance_error(teacher, X, Z=teacher.knowledge, generator=g) < 1e-12
    assert equivariance_error(teacher, X, group="permutation", generator=g) < 1e-12
    _, Yn = knowledge_task(teacher, 3, 4, noise=0.5, seed=0)
    assert 0.1 < (Yn - Y).std() < 1.0


def test_rbf_teacher_matches_a_numpy_restatement():
    teacher = make_teacher(4, 2, kernel="rbf", sharpness=1.5, seed=3).double()
    X, Y = knowledge_task(teacher, 2, 5, seed=1)
    z, a = teacher.knowledge[0, 0].numpy(), teacher.a[0, 0].numpy()
    w = teacher.head_weight[0, 0].item()
    for x, y in zip(X.numpy(), Y.numpy()):
        q = x @ z.T @ a
        weights = softmax(-((q[:, None] - q[None]) ** 2).sum(-1) / 2, axis=-1)
        np.testing.assert_allclose(y, w * weights @ x, atol=1e-12)


def test_baselines_match_their_definitions():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(20, 3, 2)), rng.normal(size=(20, 3, 2))
    mean = MeanBaseline(2).double().fit(torch.tensor(x), torch.tensor(y))
    np.testing.assert_allclose(
        mean(torch.zeros(5, 2, dtype=torch.float64)).numpy(),
        np.tile(y.reshape(-1, 2).mean(0), (5, 1)),
        atol=1e-12,
    )
    ridge = (
        RidgeBaseline(3, 2, ridge=0.5).double().fit(torch.tensor(x), torch.tensor(y))
    )
    reference = Ridge(alpha=0.5 * 20).fit(x.reshape(20, -1), y.reshape(20, -1))
    xt = rng.normal(size=(4, 3, 2))
    np.testing.assert_allclose(
        ridge(torch.tensor(xt)).numpy().reshape(4, -1),
        reference.predict(xt.reshape(4, -1)),
        atol=1e-10,
    )


def test_relative_error_matches_definition():
    x, y = torch.randn(3, 2, 2), torch.randn(3, 2, 2)
    assert relative_error(lambda t: 0 * t, x, y) == pytest.approx(1.0)
    assert relative_error(lambda t: y, x, y) == 0.0


def test_sample_efficiency_rows():
    rows = sample_efficiency(
        [3],
        [0],
        embed_dim=4,
        length=3,
        n_knowledge=2,
        test_lengths=(3, 5),
        n_test=8,
        n_steps=2,
        progress=False,
        teacher="rbf",
        learners=list(LEARNERS),
    )
    assert [r["model"] for r in rows] == list(LEARNERS)
    by_name = {r["model"]: r for r in rows}
    assert all(r["teacher"] == "rbf" for r in rows)
    assert math.isnan(by_name["MLP"]["test_n5"]) and math.isnan(
        by_name["ridge"]["test_n5"]
    )
    assert not math.isnan(by_name["KnowledgeAttention"]["test_n5"])
    assert by_name["KnowledgeAttention"]["n_params"] == 2 * 4 + 2 * 2 + 1
    assert (
        by_name["KnowledgeAttention, linear value"]["n_params"] == 2 * 4 + 2 * 2 + 4 * 4
    )
    assert by_name["mean"]["test_n3"] == pytest.approx(1.0, abs=0.3)


def test_sequences_needed_interpolates_in_log_log():
    sizes, errors = (
        np.array([10.0, 100.0]),
        np.array([1.0, 0.01]),
    )  # error = 100 / size²
    assert sequences_needed(sizes, errors, 0.1) == pytest.approx(10**1.5)
    assert math.isnan(sequences_needed(sizes, errors, 0.001))


def test_bad_inputs_raise_value_errors_naming_the_argument():
    with pytest.raises(ValueError, match="x must end in shape"):
        SequenceMLP(4, 3)(torch.randn(5, 3))
    with pytest.raises(ValueError, match="x must end in shape"):
        RidgeBaseline(4, 3)(torch.randn(5, 3))
    with pytest.raises(ValueError, match="ridge"):
        RidgeBaseline(4, 3, ridge=0.0)
    with pytest.raises(ValueError, match="hidden"):
        SequenceMLP(4, 3, hidden=0)
    with pytest.raises(ValueError, match="sharpness"):
        make_teacher(3, 2, sharpness=0)
    with pytest.raises(ValueError, match="kernel"):
        make_teacher(3, 2, kernel="cubic")
    with pytest.raises(ValueError, match="noise"):
        knowledge_task(make_teacher(3, 2), 2, 3, noise=-1.0)
    with pytest.raises(ValueError, match="n_sequences"):
        knowledge_task(make_teacher(3, 2), 0, 3)
    with pytest.raises(ValueError, match="but y has"):
        relative_error(lambda t: t, torch.randn(4, 3), torch.randn(4, 2))
    with pytest.raises(ValueError, match="sizes"):
        sample_efficiency([0], [0], progress=False)
    with pytest.raises(ValueError, match="learners"):
        sample_efficiency([2], [0], learners=["transformer"], progress=False)
    with pytest.raises(ValueError, match="n_steps"):
        fit_and_score(
            KnowledgeAttention(3, 2),
            (torch.randn(2, 4, 3), torch.randn(2, 4, 3)),
            {},
            n_steps=0,
        )
    with pytest.raises(ValueError, match="errors"):
        sequences_needed([1, 2], [1, 2], 0.5)
    with pytest.raises(ValueError, match="target"):
        sequences_needed([1, 2], [2, 1], -0.5)
