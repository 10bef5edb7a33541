"""Small shared helpers: input validation, seeds, devices and memory.

The foundation every other module stands on (it imports nothing of attnlib but
``attnlib.errors``). One idea per module:

* ``attnlib.utils.validation``: array-likes to checked tensors and arrays, and the
  checks of numbers (:func:`as_tensor`, :func:`check_int`...), used once at each public
  boundary;
* ``attnlib.utils.runtime``: seeding, the device, the memory left.

A helper added to either module is re-exported here by adding it to the import below
(and, if public, to that module's ``__all__``).
"""

from .runtime import (
    available_memory,
    device_or_cpu,
    get_device,
    seed_offset,
    seeds,
    set_seed,
)
from .validation import (
    as_float_array,
    as_tensor,
    check_in_range,
    check_int,
    check_numeric,
    check_on_device,
    check_positive,
    check_real,
    check_type,
    host_array,
    module_input,
    names_input,
)

__all__ = [
    "set_seed",
    "seed_offset",
    "seeds",
    "get_device",
    "device_or_cpu",
    "available_memory",
    "as_tensor",
    "as_float_array",
    "check_positive",
    "check_in_range",
    "check_real",
    "check_numeric",
    "check_int",
    "host_array",
    "check_on_device",
]
