"""Experiment scaffolding: the synthetic tasks and experiment models the chapters run.

The ideas live in the modules named for them (``attnlib.attention``,
``attnlib.subspace``, ...). What only serves an experiment (a data generator for one
chapter's task, a small model trained to illustrate a point) lives here, one module per
experiment family, so that a reader who opens an idea's module finds the idea and
nothing else.
"""

__all__: list[str] = []
