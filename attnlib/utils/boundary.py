"""One way to validate: a public function checks its input once, at the library's edge.

A public function is decorated with :func:`public` and checks its arguments in one
block, ``if checking(): ...``, before it computes. While it runs, the library is inside
its boundary: a public function it calls in turn (the library calling itself, with
values it has checked or computed) finds ``checking()`` False and goes straight to its
computation, as scikit-learn's ``validate_params(prefer_skip_nested_validation=True)``
skips nested validation. So no function needs a checked twin and a trusted one
(``f`` and ``_f``): the library calls the public name.

A function that calls the user's code (a model, a callable it was handed) is not
public in this sense, since what that code passes to attnlib is the user's again; it
calls the library's public functions with values it computed inside ``with trusted():``.
It may still check its own arguments in an ``if checking():`` block: they are checked
when a user calls it, and skipped where the library calls it from inside a public
function's ``with trusted():`` block (depth 2), as an experiment run calls
:func:`attnlib.training.train` with its own models and losses, whose calls then trust
too: the run checked its seed and sizes once, at its entrance.

The depth is kept per thread. Under ``torch.compile`` (and ``torch.export``) the
decorator steps aside and the checks run as traced code, where those that read values
are skipped (:func:`attnlib.utils.validation.traced`).
"""

from __future__ import annotations

import contextlib
import functools
import threading

import torch

__all__ = ["public", "checking", "trusted"]

_STATE = threading.local()


def checking() -> bool:
    """Whether the running public function was called from outside the library.

    Returns
    -------
    bool
        True in a public function called by a user (its checks run); False when another
        public function of attnlib called it (its arguments are trusted). In a function
        that is not public, False only inside a public function's ``trusted()`` block.
    """
    if torch.compiler.is_compiling():
        return True
    return getattr(_STATE, "depth", 0) <= 1


def public(fn):
    """Mark ``fn`` as a public entry of the library: its nested public calls trust.

    Parameters
    ----------
    fn : callable
        A public function whose checks sit in an ``if checking():`` block.

    Returns
    -------
    callable
        ``fn`` with the same signature and docstring, counting the depth of public
        calls while it runs.
    """

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if torch.compiler.is_compiling():
            return fn(*args, **kwargs)
        depth = getattr(_STATE, "depth", 0)
        _STATE.depth = depth + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _STATE.depth = depth

    return call


@contextlib.contextmanager
def trusted():
    """Inside the block, public functions trust their arguments (the library's own).

    Yields
    ------
    None
    """
    depth = getattr(_STATE, "depth", 0)
    _STATE.depth = depth + 1
    try:
        yield
    finally:
        _STATE.depth = depth
