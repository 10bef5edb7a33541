"""The battery's specs for ``attnlib.mux``."""

from __future__ import annotations

import importlib

import torch

from .core import (
    INVALID,
    VALID,
    Spec,
    _randn,
)

MODULE = "mux"


def specs():
    M = importlib.import_module("attnlib.mux")

    return {
        "mux.routing_task": Spec(
            M.routing_task,
            lambda: dict(n=3, length=5, n_values=3, seed=0),
            {"n": "int", "length": "int", "n_values": "int", "seed": "int0"},
        ),
        "mux.weekday_task": Spec(
            M.weekday_task,
            lambda: dict(n=3, n_friends=4, n_restaurants=3, seed=0, rota=None),
            {"n": "int", "n_friends": "int", "n_restaurants": "int", "seed": "int0"},
            extra=[
                ("rota too short", lambda a: a | dict(rota=[0, 1]), INVALID, "rota"),
                (
                    "rota out of range",
                    lambda a: a | dict(rota=[0, 1, 2, 9]),
                    INVALID,
                    "rota",
                ),
                ("rota given", lambda a: a | dict(rota=[1, 1, 0, 2]), VALID, "rota"),
                (
                    "rota of floats",
                    lambda a: a | dict(rota=[0.5, 1.5, 2.5, 3.5]),
                    INVALID,
                    "rota",
                ),
            ],
        ),
        "mux.translation_sequences": Spec(
            M.translation_sequences,
            lambda: dict(n=2, length=8, dim=3, margin=2, seed=0),
            {
                "n": "int",
                "length": "int",
                "dim": "int",
                "margin": "int0",
                "seed": "int0",
            },
            extra=[
                ("margin too wide", lambda a: a | dict(margin=4), INVALID, "margin")
            ],
        ),
        "mux.shift_tokens": Spec(
            M.shift_tokens,
            lambda: dict(x=_randn(2, 6, 3), shift=2),
            {"x": "array"},
            extra=[
                ("shift 1.5", lambda a: a | dict(shift=1.5), INVALID, "shift"),
                ("shift too far", lambda a: a | dict(shift=-6), INVALID, "shift"),
                ("shift None", lambda a: a | dict(shift=None), INVALID, "shift"),
            ],
        ),
        "mux.conv_matrix": Spec(
            M.conv_matrix,
            lambda: dict(kernel=_randn(3), length=5),
            {"kernel": "array", "length": "int"},
            extra=[
                ("even kernel", lambda a: a | dict(kernel=_randn(4)), INVALID, "kernel")
            ],
        ),
        "mux.hard_mux": Spec(
            M.hard_mux,
            lambda: dict(inputs=_randn(2, 4, 3), control=torch.tensor([0, 3])),
            {"inputs": "array"},
            group=("inputs", "control"),
            extra=[
                (
                    "control float",
                    lambda a: a | dict(control=torch.tensor([0.0, 1.0])),
                    INVALID,
                    "control",
                ),
                (
                    "control out of range",
                    lambda a: a | dict(control=torch.tensor([0, 4])),
                    INVALID,
                    "control",
                ),
                (
                    "control wrong shape",
                    lambda a: a | dict(control=torch.tensor([0])),
                    INVALID,
                    "control",
                ),
                (
                    "control a string",
                    lambda a: a | dict(control="ab"),
                    INVALID,
                    "control",
                ),
                ("control None", lambda a: a | dict(control=None), INVALID, "control"),
            ],
        ),
        "mux.soft_mux": Spec(
            lambda inputs, importance, temperature, normalizer: M.soft_mux(
                inputs, importance, temperature=temperature, normalizer=normalizer
            ),
            lambda: dict(
                inputs=_randn(2, 4, 3),
                importance=_randn(2, 4, seed=1),
                temperature=1.0,
                normalizer="softmax",
            ),
            {
                "inputs": "array",
                "importance": "scores",
                "temperature": "positive",
                "normalizer": "choice",
            },
            group=("inputs", "importance"),
        ),
        "mux.hardmax": Spec(
            M.hardmax, lambda: dict(scores=_randn(3, 4)), {"scores": "scores"}
        ),
        "mux.straight_through_hardmax": Spec(
            M.straight_through_hardmax,
            lambda: dict(scores=_randn(3, 4)),
            {"scores": "scores"},
        ),
        "mux.ConvRouter": Spec(
            lambda n_in, n_out, kernel_size, depth, width, x: M.ConvRouter(
                n_in, n_out, kernel_size, depth, width
            )(x),
            lambda: dict(
                n_in=3, n_out=2, kernel_size=3, depth=2, width=4, x=_randn(2, 5, 3)
            ),
            {
                "n_in": "int",
                "n_out": "int",
                "kernel_size": "int",
                "depth": "int",
                "width": "int",
                "x": "array",
            },
            group=("x", "n_in"),
            extra=[
                (
                    "even kernel",
                    lambda a: a | dict(kernel_size=4),
                    INVALID,
                    "kernel_size",
                )
            ],
        ),
        "mux.AttentionRouter": Spec(
            lambda n_in, n_out, d_model, max_len, normalizer, x: M.AttentionRouter(
                n_in, n_out, d_model, max_len=max_len, normalizer=normalizer
            )(x),
            lambda: dict(
                n_in=3,
                n_out=2,
                d_model=4,
                max_len=6,
                normalizer="softmax",
                x=_randn(2, 5, 3),
            ),
            {
                "n_in": "int",
                "n_out": "int",
                "d_model": "int",
                "max_len": "int",
                "normalizer": "choice",
                "x": "array",
            },
            optional=("max_len",),
            group=("x", "n_in", "max_len"),
        ),
        "mux.WeekdayMux": Spec(
            lambda n_friends, n_restaurants, d_key, normalizer, friends, day: (
                M.WeekdayMux(n_friends, n_restaurants, d_key, normalizer=normalizer)(
                    friends, day
                )
            ),
            lambda: dict(
                n_friends=4,
                n_restaurants=3,
                d_key=5,
                normalizer="softmax",
                friends=M.weekday_task(2, 4, 3).friends,
                day=M.weekday_task(2, 4, 3).day,
            ),
            {
                "n_friends": "int",
                "n_restaurants": "int",
                "d_key": "int",
                "normalizer": "choice",
                "friends": "array",
                "day": "array",
            },
            group=("friends", "day", "n_friends", "n_restaurants"),
        ),
    }
