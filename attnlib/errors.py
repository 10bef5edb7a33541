"""The typed errors of attnlib, for callers that handle one failure and not another.

Every error is a ``ValueError`` (bad input), so ``except ValueError`` keeps working; a
caller that must tell one failure from another catches its type instead of reading the
message.
"""

from __future__ import annotations

__all__ = [
    "ScoreError",
    "AttentionInputError",
    "EmptySupportError",
    "TrainingDivergedError",
]


class ScoreError(ValueError):
    """A row of attention scores is NaN, ``+inf`` or all ``-inf``.

    Raised by :func:`attnlib.functional.attention` when ``score(q, k)`` overflows its
    dtype (inputs too large) or a score callable returns something undefined; callers
    that compute the scores from their own inputs re-raise it naming those inputs.

    Parameters
    ----------
    what : str
        ``"NaN"``, ``"+inf"`` or ``"only -inf"``: what a row held.
    dtype : object
        The scores' dtype.
    """

    def __init__(self, what: str, dtype):
        self.what, self.dtype = what, dtype
        remedy = (
            "; pass float32 tensors (q.float(), k.float()) or rescale q and k"
            if str(dtype) in ("torch.float16", "torch.bfloat16")
            else "; rescale q and k"
        )
        super().__init__(
            f"score(q, k) gave {what} in a row (q and k too large for {dtype}, or a "
            f"score callable's output){remedy}"
        )


class AttentionInputError(ValueError, RuntimeError):
    """Attention's inputs do not go together: another dtype, another device, integers.

    SDPA raises a ``RuntimeError`` in these cases and attnlib a ``ValueError``; this is
    both, so that code written for either catches it. The message names the argument
    and the fix (nothing is cast, promoted or moved behind the caller's back).
    """


class EmptySupportError(ValueError):
    """A query point has no training point inside a compact kernel's support.

    Raised by Nadaraya–Watson with a compact kernel (Epanechnikov, biweight,
    triweight, boxcar) when a query's kernel weights are all zero, so that its
    average is undefined; :meth:`attnlib.kernel_regression.NadarayaWatson.score`
    turns it into a score of ``-inf``.
    """


class TrainingDivergedError(ValueError, FloatingPointError):
    """The loss became NaN or infinite.

    A ``ValueError`` about ``lr`` (and a ``FloatingPointError``). Raised by
    :func:`attnlib.training.train` and by the experiments that train in their own loop.
    """
