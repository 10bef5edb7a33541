"""Chapter 06's learning curves: which parameterisation learns a target with knowledge.

A *teacher* that is orthogonal equivariant with knowledge labels Gaussian token
sequences; *learners* that fix different parts of the map and learn the rest are fitted
to growing training sets, each tuned on a validation split, and scored on clean test
sequences of the training length and of lengths never seen.

Two teachers share the same symmetries (orthogonal equivariance with knowledge,
permutation equivariance); each seed draws a new teacher, new data and a new
initialisation:

* ``"quadratic"``: a random one-head :class:`~attnlib.symmetry.KnowledgeAttention`,
  scores ``Y A Yᵀ`` with ``Y = X Zᵀ``, exactly the form the ``KnowledgeAttention``
  learner fits (and, with ``W_O W_V`` a multiple of the identity, a
  ``MultiHeadAttention`` head's);
* ``"rbf"``: the same layer with the RBF score ``-‖(yᵢ - yⱼ) A‖² / 2`` (§3.3 of the
  symmetry paper), which no quadratic score reproduces (it contains ``-‖yⱼ A‖²/2``, a
  term in the key alone that softmax does not cancel).

The learners (``LEARNERS``) are named by what they learn: a constant (``"mean"``), one
scalar (``"scaled input"``, ``s X``), a linear map of the flattened sequence with its
penalty chosen by leave-one-out (``"ridge"``), an MLP on the flattened sequence, one
standard attention head (four ``d x d`` projections), and ``KnowledgeAttention`` with a
scalar or a matrix value map, and with a learned skip scalar.

The package has four rooms, each read in one sitting: ``teachers`` (the teachers, their
data and the relative error), ``baselines`` (the closed-form learners), ``learners``
(the trained learners and ``LEARNERS``) and ``curves`` (fitting, tuning on ``GRID``, the
sweep and its reading); every public name is importable from here.
"""

from . import baselines, curves, learners, teachers
from .baselines import *  # noqa: F403
from .curves import *  # noqa: F403
from .learners import *  # noqa: F403
from .teachers import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += teachers.__all__
__all__ += learners.__all__
__all__ += curves.__all__
__all__ += baselines.__all__
