"""A battery of bad inputs for every public callable of attnlib, data-driven.

Every public callable outside the experiments: an idea's experiments (its chapter's
runs, tasks and models) check a run once at its entrance, and one test attacks each run
there (see :func:`library_modules`).

The specs live in ``tests/battery/specs_*.py``, one module per library module
(``MODULE`` names it, ``specs()`` returns its callables' specs); this runner collects
every one of them, so that a new spec module needs no list edited here. The machinery
(mutation kinds, :class:`~battery.core.Spec`, the judge) is ``tests/battery/core.py``.

Run ``python tests/test_battery.py`` for the counts (calls, clear errors, silent NaN,
silent wrong, cryptic); ``--by-module`` adds a table per module family, ``-v`` lists the
failures, and names (``mux continuous``) restrict the run to callables so prefixed.
``PYTHONPATH=<another checkout's root>`` counts that checkout's attnlib, same specs.
"""

from __future__ import annotations

import fnmatch
import importlib
import math
import pkgutil
from pathlib import Path

import battery
import numpy as np
import pytest
import torch
from battery.core import (
    INVALID,
    VALID,
    Spec,
    _g,
    _leaves,
    _rand,
    _randn,
    _rbf1,
    cases,
    counts,
    failed,
    judge,
    run,
)

#: One spec module per library module: the battery covers every public callable of
#: these modules.
SPEC_FACTORIES = {
    module.MODULE: module.specs
    for module in (
        importlib.import_module(f"battery.{info.name}")
        for info in pkgutil.iter_modules(battery.__path__)
        if info.name != "core"
    )
}
SPECS = {
    name: spec
    for factory in SPEC_FACTORIES.values()
    for name, spec in factory().items()
}


# --------------------------------------------------------------------------- the test
#: Cases known to fail, as ``"module.callable(arg=label)"``: each is a strict xfail (the
#: test fails once it passes, so that the entry is then removed).
KNOWN: set[str] = set()


def _case_id(case) -> str:
    name, _, arg, label, *_ = case
    return f"{name}({arg}={label})"


CASES = list(cases(SPECS))


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(strict=True))
        if _case_id(c) in KNOWN
        else c
        for c in CASES
    ],
    ids=[_case_id(c) for c in CASES],
)
def test_bad_input(case):
    outcome = judge(*case)
    assert not failed(outcome), f"{outcome.verdict}: {outcome.detail}"


#: Modules the battery does not walk, and why. Private modules (``_``-prefixed: the
#: engines of an idea, as ``denoise._nlm``, ``subspace._lasso``,
#: ``normalizers._entmax``) are never walked: they trust what their idea checked, and
#: the idea's specs attack them through it.
NOT_WALKED = {
    # The closed forms and quadrature behind continuous.attention, which checks their
    # inputs (battery/specs_continuous_attention.py attacks them through it).
    "continuous.integrals": "the integrals behind continuous.attention",
    # glue records any value for the book's prose; errors holds exception types.
    "notebook": "records any value",
    "errors": "exception types",
}


def library_modules() -> set[str]:
    """Every public module and package of attnlib outside the experiments, dotted from
    the package.

    A private package's modules, such as ``subspace._lasso.common``, are engines: they
    trust. An idea's experiments (``<idea>.experiments``, a module or a package) are the
    chapters' scaffolding, not API that readers feed their own data: each run checks
    its seed and sizes once, at its entrance, and trains its own models trusted
    (issue 51). One test, ``test_a_run_refuses_nonsense_at_its_entrance`` in
    tests/test_validate_once.py, attacks every run with a bad seed and a bad size; the
    helpers are tested by tests/test_<idea>_experiments*.py.
    """
    root = Path(importlib.import_module("attnlib").__file__).parent
    found = set()
    for p in root.rglob("*.py"):
        parts = p.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if (
            parts
            and not any(part.startswith("_") for part in parts)
            and "experiments" not in parts
        ):
            found.add(".".join(parts))
    return found


def _covered(module: str, walked) -> bool:
    """A module is walked by its own specs, its package's (through ``__all__``), or an
    exemption (a name or a glob) in :data:`NOT_WALKED`."""
    return any(
        module == w or module.startswith(w + ".") or fnmatch.fnmatch(module, w)
        for w in walked
    )


def test_every_module_is_walked():
    """A new module cannot escape the battery: it is walked or exempt with a reason.

    Experiment modules are not walked: they are scaffolding, checked at each run's
    entrance (:func:`library_modules` says how and where that is tested)."""
    walked = [*SPEC_FACTORIES, *NOT_WALKED]
    # A package is walked when all its modules are (continuous: module by module).
    missing = {
        m
        for m in library_modules()
        if not _covered(m, walked)
        and not any(
            _covered(n, walked) for n in library_modules() if n.startswith(m + ".")
        )
    }
    assert not missing, sorted(missing)


def test_every_public_callable_has_a_spec():
    """Every callable a module lists in ``__all__`` has a spec, under the module's
    dotted name or one of its packages' (the faces re-export the modules' lists)."""
    missing = []
    for module in sorted(library_modules()):
        if _covered(module, NOT_WALKED):
            continue
        mod = importlib.import_module(f"attnlib.{module}")
        prefixes = [
            ".".join(module.split(".")[:i]) for i in range(1, 1 + module.count(".") + 1)
        ]
        # A package's face lists its modules' names: those are checked there.
        own = set(getattr(mod, "__all__", [])) - {
            n
            for sub in library_modules()
            if sub.startswith(module + ".")
            for n in getattr(importlib.import_module(f"attnlib.{sub}"), "__all__", [])
        }
        for name in sorted(own):
            obj = getattr(mod, name)
            if not callable(obj) or (isinstance(obj, type) and issubclass(obj, tuple)):
                continue
            if any(name in NOT_ATTACKED.get(p, ()) for p in prefixes):
                continue
            if not any(f"{p}.{name}" in SPECS for p in prefixes):
                missing.append(f"{module}.{name}")
    assert not missing, f"no battery spec for {missing}"


#: Public callables without a spec, and why (NamedTuples, result containers, exceptions,
#: are exempt).
NOT_ATTACKED = {
    # evaluating: a context manager over any model (a non-module is scored as it is),
    # with nothing to refuse; tested in test_training.
    "training": {"evaluating"},
    # The slider's container: made by frame_slider (specced), not by readers.
    "plotting": {"FrameSlider"},
    # host_array: a converter in front of scikit-learn's validation, which checks its
    # output; available_memory: no argument.
    # public, checking, trusted: the validation boundary (a decorator of any callable,
    # a flag and a context without arguments), tested in test_utils.
    "utils": {"host_array", "available_memory", "public", "checking", "trusted"},
    # output_of unwraps what a model returned (any object); tested in test_attention.
    "functional": {"output_of"},
    # The median/range summary of a committed sweep's records: its arguments are the
    # sweep's own records, not user data (tests/test_results.py recomputes).
    "results": {"seed_summary", "seed_table"},
}


def test_extremes_return_their_limits():
    """Where the battery accepts an extreme value, the output is its limit."""
    D = importlib.import_module("attnlib.denoise")
    L = importlib.import_module("attnlib.lle")
    from skimage.metrics import peak_signal_noise_ratio

    rng = np.random.default_rng(0)
    image = rng.random((8, 9))
    # sigma -> inf: every pixel sees every pixel with equal weight, the image's mean.
    wide = D.gaussian_filter_attention(image, sigma=1e30)
    np.testing.assert_allclose(wide, np.full_like(image, image.mean()), rtol=1e-12)
    noisy = image + 0.1 * rng.standard_normal(image.shape)
    ref = peak_signal_noise_ratio(image, noisy, data_range=1.0)
    assert D.psnr(image, noisy) == pytest.approx(ref, rel=1e-12)
    assert D.psnr(image * 1e300, noisy * 1e300, data_range=1e300) == pytest.approx(ref)
    assert D.psnr(image, image) == math.inf
    # The barycentric weights do not depend on the scale of the points, nor, in float64,
    # on their being float32 or float64; reg -> 0 is the unregularised minimiser.
    q, nb = torch.from_numpy(image[:5, :3]), torch.from_numpy(rng.random((5, 4, 3)))
    w = L.barycenter_weights(q, nb, 1e-3)
    torch.testing.assert_close(L.barycenter_weights(q * 1e30, nb * 1e30, 1e-3), w)
    assert L.barycenter_weights(q.float(), nb, 1e-3).dtype == torch.float64
    # K = 4 > d = 3: G is singular, and a tiny ridge's solve tends to the KKT minimiser.
    torch.testing.assert_close(
        L.barycenter_weights(q, nb, 1e-30),
        L.barycenter_weights(q, nb, 1e-10),
        atol=1e-6,
        rtol=1e-4,
    )
    # A reflection depends on its vector's direction only, at any scale.
    S = importlib.import_module("attnlib.symmetry")
    u = torch.tensor([3.0, -1.0, 2.0])
    torch.testing.assert_close(S.householder(u * 1e30), S.householder(u))
    Q = S.random_orthogonal(4, _g(), dtype=torch.float16)
    assert Q.dtype == torch.float16
    torch.testing.assert_close(Q.float() @ Q.float().T, torch.eye(4), atol=4e-3, rtol=0)
    half = L.barycenter_weights(q.half(), nb.half(), 1e-3)
    assert half.dtype == torch.float16
    torch.testing.assert_close(half.double(), w, atol=2e-2, rtol=0)


def test_modules_refuse_other_dtypes_but_run_in_float64_after_double():
    """A module refuses a float64 tensor while float32 (no silent cast), and takes it
    once converted with ``.double()``: the PyTorch way, output in float64."""
    M = importlib.import_module("attnlib.mux")
    C = importlib.import_module("attnlib.continuous.modules")
    Dn = importlib.import_module("attnlib.denoise.experiments.cnn")
    Se = importlib.import_module("attnlib.subspace.experiments")
    Sy = importlib.import_module("attnlib.symmetry.experiments")
    x = _randn(2, 5, 3).double()
    task = M.weekday_task(2, 4, 3)
    cases = [
        (M.ConvRouter(3, 2), (x,)),
        (M.AttentionRouter(3, 2, 4), (x,)),
        (M.WeekdayMux(4, 3, 5), (task.friends.double(), task.day.double())),
        (C.ContinuousAttention1D(_rbf1(), 3), (x,)),
        (Dn.SmallCNNDenoiser(3), (_rand(6, 7).double(),)),
        (Sy.SequenceMLP(5, 3, 4), (x,)),
        (Se.SelfExpressiveNet(3, 4), (x[0], x[1])),
        (Se.AttentionStack("softmax", 3, 1), (x, x, x)),
    ]
    for model, args in cases:
        with pytest.raises(ValueError, match="dtype"):
            model(*args)
        out = model.double()(*args)
        leaves = list(_leaves(out))
        assert leaves and all(t.dtype == torch.float64 for t in leaves), model


def test_battery_can_fail():
    """A callable that returns NaN silently, accepts bad input or raises cryptically.

    Each such callable is caught.
    """
    nan = Spec(lambda x: x * math.nan, lambda: dict(x=torch.ones(2)), {"x": "array"})
    assert (
        judge("nan", nan, "-", "baseline", nan.args(), VALID, "-").verdict
        == "silent-nan"
    )
    lax = Spec(lambda x: x, lambda: dict(x=torch.ones(2)), {"x": "array"})
    assert (
        judge(
            "lax", lax, "x", "nan", dict(x=torch.tensor([math.nan])), INVALID, "x"
        ).verdict
        == "silent-wrong"
    )
    rude = Spec(lambda x: 1 / 0, lambda: dict(x=1.0), {})
    assert judge("rude", rude, "x", "0", dict(x=0.0), INVALID, "x").verdict == "cryptic"


def _main():
    import sys

    prefixes = [a for a in sys.argv[1:] if not a.startswith("-")]
    chosen = {
        n: s for n, s in SPECS.items() if not prefixes or n.startswith(tuple(prefixes))
    }
    outcomes = run(chosen)
    print(dict(counts(outcomes)))
    if "--by-module" in sys.argv:
        keys = ["calls", "ok-output", "clear", "silent-nan", "silent-wrong", "cryptic"]
        print("module".ljust(18) + "".join(k.rjust(13) for k in keys))
        families = dict.fromkeys(o.callable.split(".")[0] for o in outcomes)
        for family in [*families, None]:
            mine = [o for o in outcomes if family in (None, o.callable.split(".")[0])]
            c = counts(mine)
            row = "".join(str(c[k]).rjust(13) for k in keys)
            print((family or "total").ljust(18) + row)
    if "-v" in sys.argv:
        for o in outcomes:
            if failed(o):
                print(f"{o.verdict:13s} {o.callable}({o.arg}={o.mutation}) {o.detail}")


if __name__ == "__main__":
    _main()
