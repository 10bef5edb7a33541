import dataclasses
import inspect
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
# Without a CUDA device, Triton's kernels (normalizers._triton_entmax) run in its
# interpreter on CPU tensors (tests/test_triton_kernels.py). Triton reads the variable
# when its functions are decorated, that is on its first import: set it before any.
if torch.cuda.device_count() == 0:
    os.environ.setdefault("TRITON_INTERPRET", "1")
# The files whose tests share the Colab-like environment and the book built with its
# kernel (the session fixtures `colab_environment` and `built_book`).
WEBSITE_TESTS = ("tests/test_site.py", "tests/test_pdf.py", "tests/test_colab.py")


# ------------------------------------------------------- shared helpers of the tests
# Test modules use these rather than their own copies (tests/test_meta.py checks that no
# module sets one thread by hand or defines its own softmax).


@pytest.fixture
def one_thread():
    """Run a test on one PyTorch thread, restoring the caller's count afterwards: tiny
    tensors and models gain nothing from a second thread, and on a busy machine its
    synchronisation costs more than the work (a 4x4 QR went from 0.4 ms to 30 ms).
    A module takes it for every test with ``pytestmark =
    pytest.mark.usefixtures("one_thread")``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _np_softmax(a, axis=-1):
    """softmax along ``axis``, restated in NumPy (float64, shifted by the maximum): the
    reference that attention weights are checked against, independent of PyTorch."""
    a = np.asarray(a, dtype=np.float64)
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.fixture(scope="session")
def np_softmax():
    """The NumPy restatement of softmax, ``np_softmax(a, axis=-1)``."""
    return _np_softmax


@pytest.fixture
def rng():
    """A seeded NumPy generator, fresh for each test."""
    return np.random.default_rng(0)


@pytest.fixture
def float64():
    """Run a test with float64 as PyTorch's default dtype, then restore float32."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


@pytest.fixture(autouse=True)
def _seeded():
    """Seed every generator before each test, so that a test draws the same numbers
    whatever ran before it on its xdist worker, and a failure reproduces when the
    test is run alone (models initialise their weights from torch's global
    generator)."""
    from attnlib.utils import set_seed

    set_seed(0)


#: Set to 1 to run every test as on a machine with CUDA, simulated on the CPU
#: (tests/simulated_cuda.py): ``get_device()`` picks ``cuda:0`` and device mixing
#: raises CUDA's error. ``make test-gpu`` runs the library's tests on a real GPU.
SIMULATE_CUDA_ENV = "ATTNLIB_SIMULATE_CUDA"


@pytest.fixture(autouse=True)
def _simulated_cuda():
    import os

    if os.environ.get(SIMULATE_CUDA_ENV) != "1":
        yield
        return
    from simulated_cuda import SimulatedCuda

    with SimulatedCuda():
        yield


@pytest.fixture(scope="session")
def colab_environment(tmp_path_factory):
    """A fresh Colab-like environment, attnlib installed by a chapter's setup cell
    (tests/colab_env.py; test_colab.py checks its set-up)."""
    import colab_env

    return colab_env.create(tmp_path_factory.mktemp("colab"))


@pytest.fixture(scope="session")
def built_book(colab_environment, tmp_path_factory):
    """Build the website once per session (every chapter executed, nitpicky warnings as
    errors, execution errors raised), then print the PDF edition from it (book/pdf.py).

    Each chapter is executed by the kernel of ``colab_environment``, alone in an empty
    temporary folder (``run_in_temp``): the suite's one execution of the chapters, as
    they run opened alone in Colab. The cache of executed notebooks is emptied first,
    so that no chapter's outputs come from an earlier build in the project's
    environment.

    Returns a dict: ``site`` (the built folder), ``pdf`` (its path), the build's
    ``site_returncode`` and ``site_report`` (the lines to report), and
    ``pdf_printed``, which waits for the PDF and returns book/pdf.py's return code
    and output (None when the website did not build). test_site.py, test_pdf.py and
    test_colab.py use it; under xdist they run on the same worker (see
    ``pytest_xdist_make_scheduler``), so that the book is built and printed once.
    """
    site = ROOT / "_build" / "html"
    pdf = site / "book" / "attention-before-attention.pdf"
    if colab_environment.setup.returncode != 0:
        yield {
            "site": site,
            "pdf": pdf,
            "site_returncode": None,
            "site_report": "the Colab-like environment's setup cell failed "
            "(test_colab.py says how)",
            "pdf_printed": None,
        }
        return
    shutil.rmtree(ROOT / "_build" / ".jupyter_cache", ignore_errors=True)
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    build = subprocess.run(
        [str(jupyter_book), "build", str(ROOT), "--all", "-n", "-W", "--keep-going"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        # as `make book`: no progress line on the pages (attnlib.training)
        env={**colab_environment.environ(), "ATTNLIB_PROGRESS": "off"},
    )
    lines = (build.stdout + build.stderr).splitlines()
    warnings = [
        line
        for line in lines
        if "WARNING" in line or "ERROR" in line or "Error" in line
    ]
    result = {
        "site": site,
        "pdf": pdf,
        "site_returncode": build.returncode,
        "site_report": "\n".join(warnings[:60]) + "\n...\n" + "\n".join(lines[-40:]),
    }
    pdf.unlink(missing_ok=True)
    if build.returncode != 0:
        yield dict(result, pdf_printed=None)
        return
    # The PDF is printed in the background while the website's tests run: both drive
    # a browser, and the website's worker is the suite's longest.
    log = tmp_path_factory.mktemp("pdf") / "pdf.log"
    with log.open("w") as out:
        printing = subprocess.Popen(
            [sys.executable, ROOT / "book" / "pdf.py", "--site", site, "--output", pdf],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )

    def printed():
        """book/pdf.py's return code and the end of its output, once it is done."""
        return printing.wait(), log.read_text()[-5000:]

    yield dict(result, pdf_printed=printed)
    if printing.poll() is None:  # no test waited for the PDF: stop it as Ctrl-C would,
        printing.send_signal(signal.SIGINT)  # so that it removes its assembled page
        try:
            printing.wait(timeout=30)
        except subprocess.TimeoutExpired:
            printing.kill()
            printing.wait()


def pytest_collection_modifyitems(items):
    """The PDF's tests after the website's, so that the PDF prints while those run."""
    items.sort(key=lambda item: item.nodeid.startswith("tests/test_pdf.py"))


# a hook of pytest-xdist, absent from make test-latest
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, except that the WEBSITE_TESTS share a worker."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class WebsiteTogether(LoadFileScheduling):
        def _split_scope(self, nodeid):
            scope = super()._split_scope(nodeid)
            return "website" if scope.endswith(WEBSITE_TESTS) else scope

    return WebsiteTogether(config, log)


#: Every check helper: those of attnlib.utils.validation and scikit-learn's two
#: validators (tests/test_validate_once.py counts them on the hot paths).
CHECKS = (
    "as_tensor",
    "as_float_array",
    "check_on_device",
    "check_numeric",
    "check_positive",
    "check_in_range",
    "check_real",
    "check_int",
    "host_array",
    "check_type",
    "module_input",
    "validate_data",
    "check_array",
)
#: The checks that validate what ``host_array`` brought to the host.
_AFTER_HOST = ("as_float_array", "validate_data", "check_array")


@dataclasses.dataclass
class Check:
    """One call of a check helper: the attnlib module that made it and what it named.

    ``names`` are the arguments checked (a helper's ``name``; ``X`` and ``y`` for
    ``validate_data``; none for ``check_on_device``, which checks a computed value).
    ``paired`` marks a ``host_array`` whose result a later check validated: the two
    are one check of that input.
    """

    where: str
    helper: str
    names: tuple[str, ...]
    result: object = None
    paired: bool = False


def _checked_names(helper: str, bound: inspect.BoundArguments) -> tuple[str, ...]:
    args = bound.arguments
    if helper == "check_on_device":
        return ()
    if helper == "validate_data":
        return tuple(
            n
            for n in ("X", "y")
            if not (isinstance(args.get(n), str) and args[n] == "no_validation")
        )
    if helper == "check_array":
        return (args.get("input_name") or "array",)
    return (args["name"],)


@pytest.fixture
def check_calls(monkeypatch):
    """Record every call of a check helper (:data:`CHECKS`), wherever attnlib bound it.

    Returns a list of :class:`Check`, one per call while the test runs. The helpers'
    calls of one another inside ``attnlib.utils.validation`` (``as_tensor`` reading
    ``check_on_device``) belong to one check and are not recorded.
    """
    import sklearn.utils.validation as sklearn_validation

    from attnlib.utils import validation

    calls: list[Check] = []
    originals = {
        h: getattr(validation, h, None) or getattr(sklearn_validation, h)
        for h in CHECKS
    }
    signatures = {h: inspect.signature(fn) for h, fn in originals.items()}

    def counted(helper, where):
        fn = originals[helper]

        def check(*args, **kwargs):
            bound = signatures[helper].bind(*args, **kwargs)
            bound.apply_defaults()
            if helper in _AFTER_HOST:
                for c in calls:
                    if c.helper == "host_array" and any(
                        a is c.result for a in bound.arguments.values()
                    ):
                        c.paired = True
            record = Check(where, helper, _checked_names(helper, bound))
            calls.append(record)
            out = fn(*args, **kwargs)
            if helper == "host_array":
                record.result = out
            return out

        return check

    for name, module in list(sys.modules.items()):
        if (
            not name.startswith("attnlib")
            or module is None
            or name == "attnlib.utils.validation"
        ):
            continue
        for helper, fn in originals.items():
            if getattr(module, helper, None) is fn:
                monkeypatch.setattr(module, helper, counted(helper, name))
    return calls


@pytest.fixture
def record_calls(monkeypatch):
    """Record the calls of a function that a module refers to by name.

    ``calls = record_calls(module, "name")`` replaces ``module.name`` for the test and
    gives a list that receives ``(args, kwargs, result)`` for every call, the arguments
    deep-copied as they were passed (a model before it is trained, say): a test reads
    which seed, teacher or data an experiment handed its helpers.
    """
    import copy

    def record(module, name):
        calls = []
        original = getattr(module, name)

        def recording(*args, **kwargs):
            passed = copy.deepcopy((args, kwargs))
            result = original(*args, **kwargs)
            calls.append((*passed, result))
            return result

        monkeypatch.setattr(module, name, recording)
        return calls

    return record


@pytest.fixture
def reseed_globals():
    """``reseed_globals(k)`` seeds Python's, NumPy's and PyTorch's global generators
    with ``k`` (directly, not through attnlib), so that a test can show that a seeded
    experiment does not read them."""
    import random

    def reseed(k):
        random.seed(k)
        np.random.seed(k)  # noqa: NPY002 (the global generator is the point)
        torch.manual_seed(k)

    return reseed
