"""Engines: attnlib's internal fast paths (compiled loops, fused sums, solvers).

An idea module (``attnlib.kernel_regression``, ``attnlib.denoise``, ``attnlib.lasso``,
``attnlib.normalizers``...) shows its reference computation, checks its input once and
hands the checked arrays to an engine here in one call. Engines trust what they are
given, import nothing above the foundation (``attnlib.utils``, ``attnlib.errors``), and
are not the book's public API: their names may change without notice.

- ``kernelsums``: fused Gaussian/Laplace kernel sums (Nadaraya–Watson without the
  weight matrix), on the vectorised exponential of ``fastexp``;
- ``nlm``: exact non-local means by offsets in cache-sized strips;
- ``lasso``: the row-wise Lasso solvers (homotopy, active set, ISTA, FISTA);
- ``entmax_loops`` (C, built once per machine) and ``entmax_numba`` (where there is no
  compiler): the CPU loops of sparsemax and entmax; ``entmax``: the same maps in torch
  operations, sort-based or by a fixed number of bisections, for tensors off the CPU.
"""
