"""Tests of chapter 06's learning-curve scaffolding (attnlib.symmetry.experiments)."""

import math

import numpy as np
import pytest
import torch
from scipy.special import softmax
from sklearn.linear_model import Ridge

from attnlib import MultiHeadAttention, results
from attnlib.symmetry import KnowledgeAttention, equivariance_error
from attnlib.symmetry.experiments import (
    CONTROLS,
    GRID,
    LEARNERS,
    MeanBaseline,
    RidgeBaseline,
    RidgeCVBaseline,
    ScaledInput,
    SequenceMLP,
    WithSkip,
    fit_and_score,
    fit_tuned,
    identity_value_start,
    knowledge_task,
    make_teacher,
    relative_error,
    sample_efficiency,
    sequences_needed,
)

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


def test_fit_and_score_refuses_a_test_set_holding_nan():
    """Issue 52: a NaN in a test set was scored as NaN, the value that means "this model
    cannot take that length"; it is now refused, naming the set."""
    teacher = make_teacher(4, 2, seed=0)
    data = knowledge_task(teacher, 8, 5, seed=1)
    X, Y = knowledge_task(teacher, 4, 5, seed=2)
    bad = {"n5": (X, Y.clone().index_fill_(0, torch.tensor([1]), float("nan")))}
    with pytest.raises(ValueError, match=r"test_data\['n5'\] must be finite.*its Y"):
        fit_and_score(SequenceMLP(5, 4, hidden=8), data, bad, n_steps=2)
    nan_x = (data[0].clone().fill_(float("inf")), data[1])
    with pytest.raises(ValueError, match="train_data must be finite.*its X"):
        fit_and_score(SequenceMLP(5, 4, hidden=8), nan_x, {}, n_steps=2)


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
    grid = {"lr": [1e-2], "weight_decay": [0.0], "n_steps": [1, 2]}
    rows = sample_efficiency(
        [3],
        [0],
        embed_dim=4,
        length=3,
        n_knowledge=2,
        test_lengths=(3, 5),
        n_test=8,
        grid=grid,
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
    assert by_name["KnowledgeAttention + skip"]["n_params"] == 2 * 4 + 2 * 2 + 2
    assert by_name["scaled input"]["n_params"] == 1
    assert (
        by_name["KnowledgeAttention, linear value"]["n_params"] == 2 * 4 + 2 * 2 + 4 * 4
    )
    assert by_name["mean"]["test_n3"] == pytest.approx(1.0, abs=0.3)
    assert by_name["KnowledgeAttention"]["n_steps"] in (1, 2)
    assert by_name["ridge"]["alpha"] > 0 and by_name["mean"]["lr"] is None


def test_each_seed_draws_its_own_teacher():
    grid = {"lr": [1e-2], "weight_decay": [0.0], "n_steps": [1]}
    rows = sample_efficiency(
        [4],
        [0, 1],
        learners=["mean"],
        embed_dim=4,
        length=3,
        n_knowledge=2,
        test_lengths=(3,),
        n_test=8,
        grid=grid,
        progress=False,
    )
    t0, t1 = (make_teacher(4, 2, seed=s) for s in (0, 1))
    assert not torch.equal(t0.knowledge, t1.knowledge)
    assert rows[0]["test_n3"] != rows[1]["test_n3"]


def _same_module(a, b) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_make_teacher_and_knowledge_task_follow_their_seed_alone(reseed_globals):
    teachers, tasks = [], []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        reseed_globals(state)
        teachers.append(make_teacher(3, 2, kernel="rbf", seed=seed))
        reseed_globals(state + 10)
        tasks.append(knowledge_task(teachers[0], 4, 3, noise=0.1, seed=seed))
    # the same seed under two global states: the same teacher, the same data
    assert _same_module(teachers[0], teachers[1])
    for a, b in zip(tasks[0], tasks[1]):
        assert torch.equal(a, b)
    # another seed: another teacher, other inputs and other label noise
    assert not torch.equal(teachers[0].knowledge, teachers[2].knowledge)
    assert not torch.equal(teachers[0].a, teachers[2].a)
    (x0, y0), (x1, y1) = tasks[0], tasks[2]
    assert not torch.equal(x0, x1)
    noise0, noise1 = y0 - teachers[0](x0), y1 - teachers[0](x1)
    assert not torch.allclose(noise0, noise1)


def _sweep(seeds):
    """A tiny sweep's rows, less the timings: a closed-form learner, a trained one."""
    rows = sample_efficiency(
        [3],
        seeds,
        learners=["ridge", "KnowledgeAttention"],
        embed_dim=3,
        length=3,
        n_knowledge=2,
        test_lengths=(3, 4),
        n_test=4,
        grid={"lr": [1e-2], "weight_decay": [0.0], "n_steps": [1, 2]},
        progress=False,
    )
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def test_each_seed_of_a_sweep_draws_its_own_teacher_data_and_initialisation(
    record_calls, reseed_globals
):
    from attnlib.symmetry.experiments import curves

    tasks = record_calls(curves, "knowledge_task")
    trainings = record_calls(curves, "train")
    reseed_globals(1)
    rows = _sweep([0, 1])
    # Which teacher labelled which data: calls of seed 0, then of seed 1, each with
    # its training set (label noise) and a test set per length (clean).
    per_seed = [tasks[: len(tasks) // 2], tasks[len(tasks) // 2 :]]
    probe = torch.randn(2, 3, 3, generator=torch.Generator().manual_seed(9))
    labels = []
    for calls in per_seed:
        teachers = [args[0] for args, _, _ in calls]
        # one teacher labels the training and the test data of a seed
        assert all(_same_module(t, teachers[0]) for t in teachers)
        labels.append(teachers[0](probe))
        trains = [c[2] for c in calls if c[1].get("noise", 0) > 0]
        tests = [c[2] for c in calls if c[1].get("noise", 0) == 0]
        assert len(trains) == 2 and len(tests) == 2  # per learner; per test length
        # every learner of a seed sees the same training set
        assert all(torch.equal(t[0], trains[0][0]) for t in trains)
        for x_test, _ in tests:  # no test set repeats the training inputs
            assert not torch.equal(x_test[:3, :3], trains[0][0][:3, :3])
    assert not torch.allclose(labels[0], labels[1]), "two seeds, one teacher"
    for (_, _, a), (_, _, b) in zip(*per_seed):
        assert not torch.equal(a[0], b[0]), "two seeds, the same inputs"
        assert not torch.equal(a[1], b[1]), "two seeds, the same targets"
    # Every training of the trained learner starts from its seed's initialisation.
    starts = [args[0] for args, _, _ in trainings]
    half = len(starts) // 2
    assert half >= 2  # the tuning run and the refit, per seed
    for a in starts[:half]:
        for b in starts[half:]:
            assert not torch.equal(a.knowledge, b.knowledge)
            assert not torch.equal(a.a, b.a)
    # A seed's rows do not depend on the global generators, on the seeds that ran
    # before it in the sweep, or on their order.
    reseed_globals(2)
    alone = _sweep([1])
    reseed_globals(3)
    swapped = _sweep([1, 0])
    by_seed = {s: [r for r in rows if r["seed"] == s] for s in (0, 1)}
    np.testing.assert_equal(alone, by_seed[1])
    np.testing.assert_equal(swapped, by_seed[1] + by_seed[0])
    for a, b in zip(by_seed[0], by_seed[1]):
        assert a["test_n3"] != b["test_n3"] and a["train"] != b["train"]


def test_a_seeds_teacher_data_and_initialisation_are_separate_draws(record_calls):
    """Within one seed the teacher, the training inputs and the learner's initial
    parameters are separate draws: a learner that started at the teacher's parameters
    (up to scale), or inputs that repeated its knowledge vectors, would make learning
    look cheaper than it is."""
    from attnlib.symmetry.experiments import curves

    tasks = record_calls(curves, "knowledge_task")
    trainings = record_calls(curves, "train")
    sample_efficiency(
        [3],
        [0],
        learners=["KnowledgeAttention"],
        embed_dim=6,
        length=3,
        n_knowledge=2,
        test_lengths=(3,),
        n_test=4,
        grid={"lr": [1e-2], "weight_decay": [0.0], "n_steps": [1]},
        progress=False,
    )
    args, _, (x, _) = next(c for c in tasks if c[1].get("noise", 0) > 0)
    teacher = args[0]
    start = trainings[0][0][0]

    def cosines(a, b):  # |cos| between the rows of a and of b
        a, b = (torch.nn.functional.normalize(t.reshape(-1, 6), dim=1) for t in (a, b))
        return (a @ b.T).abs()

    assert cosines(start.knowledge, teacher.knowledge).max() < 0.99
    t, s = teacher.a.flatten(), start.a.flatten()
    assert abs(t @ s) / (t.norm() * s.norm()) < 0.99
    assert cosines(x, teacher.knowledge).max() < 0.99


def test_fit_tuned_initialises_from_its_seed_alone(reseed_globals):
    teacher = make_teacher(3, 2, seed=0)
    x, y = knowledge_task(teacher, 4, 3, noise=0.1, seed=1)
    grid = {"lr": [1e-2], "weight_decay": [0.0], "n_steps": [1]}
    fitted = []
    for seed, state in ((0, 1), (0, 2), (1, 1)):
        reseed_globals(state)
        fitted.append(
            fit_tuned(lambda: KnowledgeAttention(3, 2), (x, y), seed=seed, grid=grid)[0]
        )
    assert _same_module(fitted[0], fitted[1])
    assert not torch.equal(fitted[0].knowledge, fitted[2].knowledge)


def test_scaled_input_is_the_least_squares_scalar():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(5, 3, 2)), rng.normal(size=(5, 3, 2))
    model = ScaledInput().double().fit(torch.tensor(x), torch.tensor(y))
    s, *_ = np.linalg.lstsq(x.reshape(-1, 1), y.reshape(-1), rcond=None)
    assert model.scale.item() == pytest.approx(s[0], rel=1e-12)
    xt = rng.normal(size=(2, 7, 2))  # any length
    np.testing.assert_allclose(model(torch.tensor(xt)).numpy(), s[0] * xt, rtol=1e-12)


def test_ridge_cv_picks_the_leave_one_out_penalty():
    rng = np.random.default_rng(2)
    n, length, d = 12, 3, 2
    x = rng.normal(size=(n, length, d))
    y = x @ rng.normal(size=(d, d)) + 0.5 * rng.normal(size=(n, length, d))
    alphas = (0.01, 1.0, 100.0)
    model = RidgeCVBaseline(length, d, alphas=alphas).double()
    model.fit(torch.tensor(x), torch.tensor(y))
    xf, yf = x.reshape(n, -1), y.reshape(n, -1)

    def loo(alpha):  # brute-force leave-one-out with scikit-learn's Ridge
        errors = []
        for i in range(n):
            keep = np.arange(n) != i
            fit = Ridge(alpha=alpha).fit(xf[keep], yf[keep])
            errors.append(((fit.predict(xf[i : i + 1]) - yf[i]) ** 2).mean())
        return np.mean(errors)

    assert model.alpha_ == min(alphas, key=loo)
    reference = Ridge(alpha=model.alpha_).fit(xf, yf)
    np.testing.assert_allclose(
        model(torch.tensor(x)).numpy().reshape(n, -1), reference.predict(xf), atol=1e-10
    )


def test_with_skip_adds_a_learned_multiple_of_the_input():
    torch.manual_seed(0)
    inner = KnowledgeAttention(4, 2).double()
    model = WithSkip(inner)
    x = torch.randn(2, 5, 4, dtype=torch.float64)
    torch.testing.assert_close(model(x), inner(x))  # starts at zero
    with torch.no_grad():
        model.skip.fill_(0.7)
    torch.testing.assert_close(model(x), inner(x) + 0.7 * x)
    g = torch.Generator().manual_seed(0)
    z = inner.knowledge.detach()
    assert equivariance_error(model, x, generator=g, group="permutation") < 1e-12
    assert (
        equivariance_error(lambda a, b: inner(a, b) + 0.7 * a, x, Z=z, generator=g)
        < 1e-12
    )


def test_identity_value_start_changes_only_the_value_path_start():
    """The control head computes softmax(Q Kᵀ/√d) X (SDPA on its own projections) and
    keeps the standard head's query and key draws; it still trains every parameter."""
    torch.manual_seed(3)
    standard = LEARNERS["MultiHeadAttention"](6, 4, 2).double()
    torch.manual_seed(3)
    control = CONTROLS["MultiHeadAttention, identity value start"](6, 4, 2).double()
    w, b = control.in_proj_weight.detach(), control.in_proj_bias.detach()
    torch.testing.assert_close(w[:8], standard.in_proj_weight.detach()[:8])
    torch.testing.assert_close(b[:8], standard.in_proj_bias.detach()[:8])
    x = torch.randn(3, 6, 4, dtype=torch.float64)
    q, k = x @ w[:4].T + b[:4], x @ w[4:8].T + b[4:8]
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, x)
    torch.testing.assert_close(control(x).output, expected)
    assert (standard(x).output - expected).abs().max() > 0.1  # the start did change
    assert all(p.requires_grad for p in control.parameters())
    rows = sample_efficiency(
        [4],
        [0],
        learners=["MultiHeadAttention, identity value start"],
        grid={"lr": [1e-2], "weight_decay": [0.0], "n_steps": [5]},
        n_test=4,
        progress=False,
    )
    assert [r["model"] for r in rows] == ["MultiHeadAttention, identity value start"]
    with pytest.raises(ValueError, match="packed projections"):
        identity_value_start(MultiHeadAttention(4, 1, kdim=3))


def test_fit_tuned_chooses_on_the_held_out_sequences_and_refits():
    teacher = make_teacher(4, 2, seed=0)
    x, y = knowledge_task(teacher, 8, 5, noise=0.05, seed=1)
    grid = {"lr": [1e3, 3e-2], "weight_decay": [0.0], "n_steps": [1, 150]}
    make = lambda: KnowledgeAttention(4, 2)  # noqa: E731
    model, chosen = fit_tuned(make, (x, y), grid=grid, seed=3)
    # lr = 1000 diverges or does worse; one step learns nothing: 150 steps at 3e-2 win
    assert (chosen["lr"], chosen["n_steps"]) == (3e-2, 150)
    # its validation error is the held-out quarter's (the last 2 of 8), recomputed
    torch.manual_seed(3)
    alone = make()
    fit_and_score(alone, (x[:6], y[:6]), {}, n_steps=150, lr=3e-2, seed=3)
    held = relative_error(alone, x[6:], y[6:])
    assert chosen["val"] == pytest.approx(held, rel=1e-5)
    # the returned model is refitted on all eight sequences
    torch.manual_seed(3)
    full = make()
    fit_and_score(full, (x, y), {}, n_steps=150, lr=3e-2, seed=3)
    torch.testing.assert_close(model(x), full(x))


def test_committed_sweep_slice_recomputes():
    """Seed 0 at the smallest size of the committed sweep on the RBF teacher, recomputed
    here (tests/test_results.py recomputes the quadratic teacher's)."""
    sweep = results.load("symmetry")
    config = sweep["config"]
    size, seed = min(config["sizes"]), config["seeds"][0]
    names = ["mean", "scaled input", "ridge", "KnowledgeAttention"]
    for teacher in ["rbf"]:
        rows = sample_efficiency(
            [size],
            [seed],
            teacher=teacher,
            learners=names,
            n_test=config["n_test"],
            grid=config["grid"],
            progress=False,
        )
        committed = {
            r["model"]: r
            for r in sweep["rows"]
            if (r["teacher"], r["n_train"], r["seed"]) == (teacher, size, seed)
        }
        for row in rows:
            want = committed[row["model"]]
            for key in ("test_n6", "test_n24", "lr", "n_steps"):
                if want[key] is None:
                    assert row[key] is None or math.isnan(row[key])
                else:
                    assert row[key] == pytest.approx(want[key], rel=1e-2), (
                        teacher,
                        row["model"],
                    )


def test_default_grid_has_every_setting():
    assert set(GRID) == {"lr", "weight_decay", "n_steps"} and min(GRID["n_steps"]) > 0


def test_sequences_needed_interpolates_in_log_log():
    # error = 100 / size²
    sizes, errors = (
        np.array([10.0, 100.0]),
        np.array([1.0, 0.01]),
    )
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
        sample_efficiency([1], [0], progress=False)
    with pytest.raises(ValueError, match="grid"):
        fit_tuned(
            lambda: KnowledgeAttention(3, 2),
            (torch.randn(4, 2, 3), torch.randn(4, 2, 3)),
            grid={"lr": [0.1]},
        )
    with pytest.raises(ValueError, match="val_fraction"):
        fit_tuned(
            lambda: KnowledgeAttention(3, 2),
            (torch.randn(4, 2, 3), torch.randn(4, 2, 3)),
            val_fraction=1.0,
        )
    with pytest.raises(ValueError, match="y must have x's shape"):
        ScaledInput().fit(torch.randn(2, 3, 4), torch.randn(2, 3, 2))
    with pytest.raises(ValueError, match="alphas"):
        RidgeCVBaseline(3, 2, alphas=())
    with pytest.raises(ValueError, match="model"):
        WithSkip(lambda x: x)
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


def test_relative_error_scores_a_module_in_eval_mode_and_restores_its_mode():
    """A scorer must not score dropout's noise (nor move batch norm's statistics)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5))
    x, y = torch.randn(4, 5, 3), torch.randn(4, 5, 3)
    scores = {relative_error(model, x, y) for _ in range(5)}
    assert len(scores) == 1 and model.training  # deterministic; mode restored
    with torch.no_grad():
        ref = float(((model[0](x) - y) ** 2).sum() / (y**2).sum())  # dropout off
    assert scores.pop() == pytest.approx(ref, rel=1e-6)
    model.eval()
    relative_error(model, x, y)
    assert not model.training
