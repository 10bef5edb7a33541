"""Continuous attention: the weights form a density over time or space.

The context is an expectation under that density.

The score is a function ``f(t) = -(t - μ)ᵀ Σ⁻¹ (t - μ) / 2`` of a position ``t`` (a
point of ``[0, 1]`` for a document, of ``[0, 1]²`` for an image). Softmax (α = 1) turns
it into a Gaussian density, sparsemax (α = 2) into a truncated parabola or paraboloid
whose support is an interval or an ellipse. The values are a function ``V(t) = Bᵀψ(t)``
of N Gaussian radial basis functions ``ψ``, fitted to the discrete tokens by ridge
regression, so the context vector ``E_p[V(t)] = Bᵀr`` needs only ``r = E_p[ψ(t)]``, an
N-vector computed in closed form (or, for the 2-D truncated paraboloid, by one short
Gauss–Legendre sum along the ellipse's major axis over closed-form chord integrals),
with a backward pass given by the generalised covariance of Proposition 3 of Martins et
al. (2020).

One idea per module:

* ``attnlib.continuous.densities``: the densities and their thresholds (Eqs. 10–13);
* ``attnlib.continuous.basis``: the RBF value functions and their ridge fit (Eq. 16);
* ``attnlib.continuous.attention``: ``r`` and its Jacobian in 1-D and 2-D (Eqs. 15,
  17–18, Algorithm 1), through the closed forms and quadrature of
  ``attnlib.continuous.integrals``;
* ``attnlib.continuous.modules``: the ``nn.Module`` layers.

The chapter's experiments (documents, cluttered digits, alignment, the cost of reading
out) are in ``attnlib.continuous.experiments``.

Shapes follow the book's conventions: a batch of densities has ``mu`` of shape
``(batch,)`` (1-D) or ``(batch, 2)`` (2-D) and returns ``r`` of shape ``(batch, N)``;
tokens are rows, so the value coefficients ``B`` are ``(..., N, D)``.
"""

from . import attention, basis, densities, modules
from .attention import *  # noqa: F403
from .basis import *  # noqa: F403
from .densities import *  # noqa: F403
from .modules import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += densities.__all__
__all__ += basis.__all__
__all__ += attention.__all__
__all__ += modules.__all__
