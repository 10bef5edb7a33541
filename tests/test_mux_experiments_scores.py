"""Tests of chapter 08's losses and accuracies (attnlib.mux.experiments.scores)."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from attnlib.mux import ConvRouter, routing_task
from attnlib.mux.experiments.routing import pointer_task
from attnlib.mux.experiments.scores import (
    accuracy_by_distance,
    accuracy_by_offset,
    pointer_loss,
    routing_loss,
)


class _Fixed(nn.Module):
    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, x):
        return self.logits


def test_accuracy_by_distance_and_loss_against_a_direct_count():
    t = routing_task(30, 8, 4, seed=5)
    logits = torch.randn(30, 8, 4, generator=torch.Generator().manual_seed(0))
    acc = accuracy_by_distance(_Fixed(logits), t)
    pred, target, marker = logits.argmax(-1).numpy(), t.target.numpy(), t.marker.numpy()
    for d in range(8):
        pairs = [(b, j) for b in range(30) for j in range(8) if abs(j - marker[b]) == d]
        expected = (
            np.mean([pred[b, j] == target[b] for b, j in pairs]) if pairs else np.nan
        )
        np.testing.assert_allclose(acc[d], expected)
    logp = torch.log_softmax(logits, -1).numpy()
    expected_loss = -np.mean(
        [logp[b, j, target[b]] for b in range(30) for j in range(8)]
    )
    np.testing.assert_allclose(
        routing_loss(_Fixed(logits), t).item(), expected_loss, rtol=1e-6
    )


def test_accuracy_by_offset_and_loss_against_a_direct_count():
    t = pointer_task(8, length=6, n_values=3, seed=1)

    class Oracle(torch.nn.Module):
        def forward(self, x):
            return 10 * torch.nn.functional.one_hot(t.target, 3).float()

    acc = accuracy_by_offset(Oracle(), t)
    offsets = (torch.arange(6)[None] - t.source).abs()
    present = set(offsets.flatten().tolist())
    assert all(acc[d] == 1.0 for d in present) and all(
        math.isnan(acc[d]) for d in range(6) if d not in present
    )
    assert pointer_loss(Oracle(), t) < 1e-3


def test_accuracies_evaluate_in_eval_mode_and_restore_the_mode():
    seen = []

    class Recorder(ConvRouter):
        def forward(self, x):
            seen.append(self.training)
            return super().forward(x)

    model = Recorder(7, 6).train()
    accuracy_by_distance(model, routing_task(4, 10, 6, seed=0))
    assert seen == [False] and model.training
    model.eval()
    accuracy_by_distance(model, routing_task(4, 10, 6, seed=0))
    assert seen == [False, False] and not model.training


@pytest.mark.parametrize("score", [routing_loss, accuracy_by_distance])
def test_a_pointer_task_is_refused_where_a_routing_task_is_due(score):
    with pytest.raises(ValueError, match="task must be a RoutingTask"):
        score(ConvRouter(7, 6), pointer_task(2, length=6, n_values=3))
