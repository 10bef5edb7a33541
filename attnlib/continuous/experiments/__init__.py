"""Chapter 07b's experiments: documents, digits, alignment, the cost of reading out.

- ``documents``: span documents and their classifier with 1-D continuous attention
  (the paper's Table 1);
- ``digits``: cluttered digits and their classifier with 2-D continuous attention;
- ``alignment``: a monotone alignment task and its continuous-attention model;
- ``classify``: training and scoring the small classifiers of these experiments;
- ``readout_cost``: the time to read a continuous density out against a discrete one.

Every public name is importable from here.
"""

from . import alignment, classify, digits, documents, readout_cost
from .alignment import *  # noqa: F403
from .classify import *  # noqa: F403
from .digits import *  # noqa: F403
from .documents import *  # noqa: F403
from .readout_cost import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += documents.__all__
__all__ += digits.__all__
__all__ += alignment.__all__
__all__ += classify.__all__
__all__ += readout_cost.__all__
