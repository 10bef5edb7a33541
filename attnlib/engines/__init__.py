"""Engines: the compiled or fused fast paths and solvers behind the ideas' modules."""
