import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from attnlib.plotting import PALETTE, attention_heatmap, image_grid, use_book_style  # noqa: E402


def test_style_uses_the_colour_blind_safe_palette():
    use_book_style()
    assert matplotlib.rcParams["axes.prop_cycle"].by_key()["color"] == PALETTE


def test_heatmap_labels_axes_and_chooses_signed_colours():
    fig, (a, b) = plt.subplots(1, 2)
    attention_heatmap(
        torch.softmax(torch.randn(3, 4), -1),
        ["a", "b", "c"],
        list("wxyz"),
        ax=a,
        annotate=True,
    )
    assert a.get_xlabel() == "key" and a.get_ylabel() == "query"
    assert [t.get_text() for t in a.get_yticklabels()] == ["a", "b", "c"]
    im = attention_heatmap(np.array([[1.0, -2.0], [0.5, 0.0]]), ax=b).images[0]
    assert im.get_clim() == (-2.0, 2.0) and im.get_cmap().name == "RdBu_r"
    plt.close(fig)
    with pytest.raises(ValueError, match="weights must be a 2-D"):
        attention_heatmap(np.zeros(3))


def test_image_grid_shows_every_image():
    fig = image_grid(
        [np.zeros((4, 4)), np.ones((4, 4, 3)), np.eye(4)], ["a", "b", "c"], ncols=2
    )
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 3 and [ax.get_title() for ax in shown] == ["a", "b", "c"]
    plt.close(fig)
