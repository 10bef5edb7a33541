"""Small shared helpers: input validation, seeds, devices and memory.

The foundation every other module stands on (it imports nothing of attnlib but
``attnlib.errors``). One idea per module:

* ``attnlib.utils.validation``: array-likes to checked tensors and arrays, and the
  checks of numbers (:func:`as_tensor`, :func:`check_int`...), used once at each public
  boundary;
* ``attnlib.utils.runtime``: seeding, the device, the memory left;
* ``attnlib.utils.boundary``: where the checks run: :func:`public` marks an entry of
  the library, whose nested public calls trust their arguments.

A name listed in these modules' ``__all__`` is on this face; the checks the library's
modules share but readers need not (``check_type``, ``module_input``, ``names_input``,
``traced``, ``finite_on_host``) are imported from ``attnlib.utils.validation``.
"""

from . import boundary, runtime, validation
from .boundary import *  # noqa: F403
from .runtime import *  # noqa: F403
from .validation import *  # noqa: F403

# The face lists what its modules list, in reading order.
__all__: list[str] = []
__all__ += runtime.__all__
__all__ += validation.__all__
__all__ += boundary.__all__
