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
    with pytest.raises(ValueError, match="weights must be a non-empty 2-D"):
        attention_heatmap(np.zeros(3))


def test_image_grid_shows_every_image():
    fig = image_grid(
        [np.zeros((4, 4)), np.ones((4, 4, 3)), np.eye(4)], ["a", "b", "c"], ncols=2
    )
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 3 and [ax.get_title() for ax in shown] == ["a", "b", "c"]
    plt.close(fig)


# ------------------------------------------------------------- the book's figure width
def test_book_style_draws_at_the_columns_width():
    from attnlib.plotting import COLUMN_INCHES, DPI

    use_book_style()
    fig = plt.figure()
    # ~680 px: a figure of the default size displays at its natural size in the column
    assert fig.get_size_inches()[0] * fig.dpi == COLUMN_INCHES * DPI == 680
    plt.close(fig)


# ----------------------------------------------------------- shared scales and zeros
def test_heatmap_refuses_vmin_above_vmax_and_keeps_given_limits():
    with pytest.raises(ValueError, match="vmin must be at most vmax"):
        attention_heatmap(np.eye(3), vmin=1.0, vmax=0.5)
    fig, ax = plt.subplots()
    im = attention_heatmap(np.eye(3) * 0.2, ax=ax, vmin=0, vmax=1).images[0]
    assert im.get_clim() == (0.0, 1.0)
    plt.close(fig)


def test_heatmap_draws_exact_zeros_in_their_own_colour():
    fig, ax = plt.subplots()
    W = np.array([[0.0, 1e-3], [0.5, 0.5]])
    im = attention_heatmap(W, ax=ax, zero_color="white", colorbar=False).images[0]
    rgba = im.to_rgba(im.get_array())
    assert tuple(rgba[0, 0]) == (1.0, 1.0, 1.0, 1.0)  # the zero: white
    assert tuple(rgba[0, 1]) != (1.0, 1.0, 1.0, 1.0)  # a tiny weight: the colour map
    plt.close(fig)


def test_heatmap_grid_puts_every_panel_on_one_scale_with_one_colour_bar():
    from attnlib.plotting import heatmap_grid

    peaked = np.array([[0.9, 0.1], [0.2, 0.8]])
    flat = np.full((2, 2), 0.5)
    fig = heatmap_grid([peaked, flat], ["T = 1", "T = 8"])
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.images[0].get_clim() for ax in panels] == [(0.0, 0.9)] * 2
    assert len(fig.axes) == 3  # two panels and one colour bar
    assert fig.get_size_inches()[0] == pytest.approx(6.8)
    plt.close(fig)
    with pytest.raises(ValueError, match="vmin must be at most vmax"):
        heatmap_grid([peaked], vmin=2, vmax=1)


def test_image_grid_shares_its_scale_and_can_add_a_colour_bar():
    fig = image_grid([np.zeros((4, 4)), np.eye(4)], colorbar="intensity")
    assert [ax.images[0].get_clim() for ax in fig.axes if ax.images][:2] == [
        (0.0, 1.0)
    ] * 2
    assert any(ax.get_ylabel() == "intensity" for ax in fig.axes)
    plt.close(fig)
    with pytest.raises(ValueError, match="vmin must be at most vmax"):
        image_grid([np.eye(2)], vmin=1.0, vmax=0.0)


# -------------------------------------------------------------------------- the slider
def _draw(t):
    fig, ax = plt.subplots(figsize=(6.8, 2.5))
    ax.plot([0, 1], [0, t])
    ax.set_title(f"T = {t}")
    return fig


def test_frame_slider_renders_equal_frames_and_shows_the_default_one():
    import re

    from attnlib.plotting import frame_slider

    plt.close("all")
    s = frame_slider(_draw, [0.5, 1, 2, 8], label="temperature T", default=2, alt="a")
    assert plt.get_fignums() == []  # every frame's figure was closed
    assert len(s.frames) == 4 and len(set(s.frames)) == 4
    import io

    from PIL import Image

    sizes = {Image.open(io.BytesIO(f)).size for f in s.frames}
    assert 640 <= s.size[0] <= 700  # shown at the column's width ...
    (pixels,) = sizes  # every frame the same size, from twice the pixels:
    assert all(0 <= p - 2 * n <= 1 for p, n in zip(pixels, s.size))
    assert f'width="{s.size[0]}" height="{s.size[1]}"' in s._repr_html_()
    page = s._repr_html_()
    imgs = re.findall(r"<img [^>]*>", page)
    assert len(imgs) == 4
    visible = [i for i, tag in enumerate(imgs) if " hidden" not in tag]
    assert visible == [2]  # without script and in print: the default frame
    assert 'data-value="2"' in imgs[2] and 'alt="a (temperature T = 2)"' in imgs[2]
    assert 'type="range"' in page and 'value="2"' in page and "oninput=" in page
    assert "@media print" in page and "<script" not in page
    other = frame_slider(_draw, [1, 2], label="T")._repr_html_()
    ids = set(re.findall(r'id="([^"]+)"', page)) & set(
        re.findall(r'id="([^"]+)"', other)
    )
    assert ids == set()  # two sliders on one page do not share an id
    assert s._repr_png_() == s.frames[2]


def test_frame_slider_refuses_what_it_cannot_show():
    from attnlib.plotting import frame_slider

    with pytest.raises(ValueError, match="draw must return a matplotlib Figure"):
        frame_slider(lambda v: None, [1, 2], label="T")
    assert plt.get_fignums() == []
    with pytest.raises(ValueError, match="values must hold 2 to 40"):
        frame_slider(_draw, [1], label="T")
    with pytest.raises(ValueError, match="default must be one of values"):
        frame_slider(_draw, [1, 2], label="T", default=3)
    with pytest.raises(ValueError, match="label"):
        frame_slider(_draw, [1, 2], label="")
    with pytest.raises(ValueError, match="draw must be callable"):
        frame_slider(None, [1, 2], label="T")
    plt.close("all")


def test_moving_the_slider_changes_the_frame_in_a_browser(tmp_path):
    """The HTML works as a page shows it: no kernel, its inline handler only."""
    from pathlib import Path

    from attnlib.plotting import frame_slider

    chromium = Path("/usr/bin/chromium")
    assert chromium.exists(), "Debian's chromium is missing (make browser)"
    from playwright.sync_api import sync_playwright

    html = "".join(
        frame_slider(_draw, v, label="T", default=v[0])._repr_html_()
        for v in ([1, 2, 4], [10, 20])
    )
    (tmp_path / "page.html").write_text(f"<html><body>{html}</body></html>")
    visible = """(i) => [...document.querySelectorAll('.attnlib-slider')[i]
        .querySelectorAll('img')].map(im => im.offsetWidth > 0)"""
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1280, "height": 900})
        page.goto((tmp_path / "page.html").as_uri())
        assert page.evaluate(visible, 0) == [True, False, False]
        page.locator("input[type=range]").first.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        assert page.evaluate(visible, 0) == [False, False, True]
        assert page.locator("output").first.text_content() == "4"
        assert page.evaluate(visible, 1) == [True, False]  # the other one is untouched
        page.emulate_media(media="print")
        assert page.locator(".attnlib-slider-control").first.is_hidden()
        b.close()


# -------------------------------------------------------------------------- the tables
def test_table_shows_words_fixed_decimals_a_dash_and_no_index():
    import pandas as pd

    from attnlib.plotting import table

    df = pd.DataFrame({"n_keys": [8, 16], "rel_error": [1 / 3, np.nan]})
    page = table(df, headers={"rel_error": "relative error"}).to_html()
    assert "relative error" in page and "n keys" in page and "n_keys" not in page
    assert "0.333" in page and "0.3333" not in page and "—" in page
    assert "nan" not in page.lower().replace("attnlib", "")
    assert 'class="row_heading' not in page  # the numeric index is hidden
    page = table(df, formats={"rel_error": "{:.1e}"}).to_html()
    assert "3.3e-01" in page
    df["share"] = [0.25, 0.5]  # a format for one column keeps the others' precision
    page = table(df, precision=1, formats={"rel_error": "{:.1e}"}).to_html()
    assert ">0.2<" in page and ">0.250000<" not in page
    with pytest.raises(ValueError, match="headers names columns not in df"):
        table(df, headers={"nope": "x"})
    with pytest.raises(ValueError, match="df must be a pandas DataFrame"):
        table([[1, 2]])


# ------------------------------------------------------------------ drawn diagrams
DIAGRAMS = ["qkv_lookup", "kernel_bump", "patches_as_tokens", "neighbourhood_mask"]
DIAGRAMS += ["block_diagonal", "rotation_equivariance", "simplex_projection"]
DIAGRAMS += ["density_over_time", "multiplexer_switch"]


def _colours(fig):
    """Every RGB a diagram draws with (alpha aside), from patches, lines and text."""
    from matplotlib.colors import to_rgba_array

    out = set()
    for artist in fig.findobj():
        if artist is fig or artist in fig.axes or artist is fig.patch:
            continue
        for get in ("get_facecolor", "get_edgecolor", "get_color"):
            if hasattr(artist, get):
                for rgba in to_rgba_array(getattr(artist, get)()):
                    if rgba[3] > 0:
                        out.add(tuple(round(float(v), 3) for v in rgba[:3]))
    return out


@pytest.mark.parametrize("name", DIAGRAMS)
def test_every_diagram_is_svg_legible_on_a_phone_and_colour_blind_safe(name):
    from matplotlib.colors import to_rgb

    from attnlib.plotting import diagrams

    plt.close("all")
    fig = getattr(diagrams, name)()
    assert isinstance(fig, diagrams.Diagram)
    assert plt.get_fignums() == []  # not pyplot's: the cell shows it once, as its value
    svg = fig._repr_svg_()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "<path" in svg
    assert diagrams.smallest_text_px(fig, 390) >= 8.0
    assert diagrams.smallest_text_px(fig, 1280) >= 12.0  # desktop: natural size
    allowed = {tuple(round(v, 3) for v in to_rgb(c)) for c in PALETTE + ["#222222"]}
    off = {c for c in _colours(fig) if len(set(c)) > 1 and c not in allowed}
    assert not off, f"{name} draws with colours off the palette: {off}"


def test_smallest_text_px_scales_a_wide_figure_to_the_column():
    from attnlib.plotting import smallest_text_px

    fig = matplotlib.figure.Figure(figsize=(4, 2))
    fig.text(0.5, 0.5, "small", fontsize=6)
    fig.text(0.2, 0.2, "big", fontsize=20)
    fig.text(0.1, 0.1, "   ", fontsize=1)  # blank text is not a label
    assert smallest_text_px(fig, 2000) == pytest.approx(8.0)  # 6 pt = 8 px, unscaled
    wide = matplotlib.figure.Figure(figsize=(12, 2))
    wide.text(0.02, 0.5, "left", fontsize=12)
    wide.text(0.9, 0.5, "right", fontsize=12)
    shown = smallest_text_px(wide, 390)
    assert 16 * 390 / (12 * 96) * 0.9 < shown < 16 * 390 / (12 * 96) * 1.1
    assert smallest_text_px(matplotlib.figure.Figure(), 390) == float("inf")
    with pytest.raises(ValueError, match="fig must be a matplotlib Figure"):
        smallest_text_px("fig")
    with pytest.raises(ValueError, match="column_px"):
        smallest_text_px(fig, 0)


def _numbers(fig, prefix):
    """The numbers of the diagram's text that starts with ``prefix``."""
    import re

    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    hits = [t for t in texts if t.startswith(prefix)]
    assert len(hits) == 1, (prefix, texts)
    return [float(v) for v in re.findall(r"-?\d+\.\d+", hits[0])]


def test_the_simplex_diagram_shows_entmax_packages_softmax_and_sparsemax():
    import entmax

    from attnlib.plotting import simplex_projection

    fig = simplex_projection()
    theta = torch.tensor([_numbers(fig, r"$\theta")], dtype=torch.float64)
    soft = torch.softmax(theta, -1)[0].numpy()
    sparse = entmax.sparsemax(theta, dim=-1)[0].numpy()
    np.testing.assert_allclose(_numbers(fig, "softmax:"), soft, atol=0.006)
    np.testing.assert_allclose(_numbers(fig, "sparsemax:"), sparse, atol=0.006)
    assert sparse[2] == 0 and (soft > 0).all()  # the picture's point: an exact zero


def test_the_lookup_diagram_shows_softmax_weights_and_arrows_as_wide_as_them():
    from matplotlib.patches import FancyArrowPatch

    from attnlib.plotting import qkv_lookup

    fig = qkv_lookup()
    texts = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
    scores = [float(t) for t in texts if t[:1] in "+-" and t[1:2].isdigit()]
    weights = [float(t[2:]) for t in texts if t.startswith("w=")]
    expected = torch.softmax(torch.tensor(scores), 0).numpy()  # the scores are q·k/√d
    np.testing.assert_allclose(weights, expected, atol=0.006)
    widths = sorted({round(a.get_linewidth(), 3) for a in fig.findobj(FancyArrowPatch)})
    assert len(widths) >= 4  # one width per weight (and the thin key-to-value arrows)


# ------------------------------------------------------- coefficient maps in blocks
def test_block_shares_sums_weight_per_pair_of_groups():
    from attnlib.plotting import block_shares

    groups = [0, 0, 1, 1, 1]
    C = np.zeros((5, 5))
    C[0, 1], C[1, 0], C[2, 3], C[3, 4], C[4, 2] = 1.0, -2.0, 0.5, 0.5, 3.0
    np.testing.assert_array_equal(block_shares(C, groups), np.eye(2))  # block-diagonal
    C[0, 4] = -1.0  # row 0 now puts half of its |C| on the other group
    expected = np.array([[3 / 4, 1 / 4], [0.0, 1.0]])
    np.testing.assert_allclose(block_shares(C, groups), expected)
    by_hand = np.abs(C[:2]).sum(0)  # an independent sum for group 0's rows
    assert block_shares(C, groups)[0, 1] == by_hand[2:].sum() / by_hand.sum()
    np.testing.assert_array_equal(
        block_shares(np.zeros((2, 2)), [0, 1]), np.zeros((2, 2))
    )
    with pytest.raises(ValueError, match="groups must be sorted"):
        block_shares(C, [1, 0, 0, 1, 1])
    with pytest.raises(ValueError, match="groups must hold one label per row"):
        block_shares(C, [0, 1])
    with pytest.raises(ValueError, match="C must be a non-empty square"):
        block_shares(np.ones((2, 3)), [0, 1])


def test_coefficient_maps_show_a_dense_small_map_and_the_groups_blocks():
    from attnlib.plotting import block_shares, coefficient_maps

    rng = np.random.default_rng(0)
    groups = np.repeat([0, 1, 2], 10)
    dense = 0.01 * rng.uniform(0.1, 1, (30, 30))  # tiny entries, as LSR's: never blank
    sparse = np.where(rng.uniform(size=(30, 30)) < 0.1, rng.normal(size=(30, 30)), 0.0)
    plt.close("all")
    fig = coefficient_maps([dense, sparse], groups, ["dense", "sparse"], shares=True)
    maps = [
        ax for ax in fig.axes if ax.images and ax.get_title() in ("dense", "sparse")
    ]
    assert len(maps) == 2
    shown = maps[0].images[0].get_array()
    np.testing.assert_allclose(shown.max(1), 1.0)  # every row's largest at the top
    rgba = maps[0].images[0].to_rgba(shown)
    assert rgba[..., :3].std() > 0.05  # the colours vary: not a blank square
    assert (
        maps[1].images[0].get_array().mask.sum() == (sparse == 0).sum()
    )  # zeros apart
    lines = [ln for ln in maps[1].get_lines()]
    assert len(lines) == 4  # two boundaries each way between three groups
    share_panels = [ax for ax in fig.axes if ax.get_title() == "share of |C| per block"]
    assert len(share_panels) == 2
    texts = [float(t.get_text()) for t in share_panels[1].texts]
    np.testing.assert_allclose(texts, block_shares(sparse, groups).ravel(), atol=0.006)
    plt.close(fig)
    with pytest.raises(ValueError, match="maps must all have the same shape"):
        coefficient_maps([dense, np.eye(3)], groups)
    with pytest.raises(ValueError, match="floor must be below 1"):
        coefficient_maps([dense], groups, floor=1.0)
    with pytest.raises(ValueError, match="titles must hold one title per map"):
        coefficient_maps([dense], groups, ["a", "b"])
    assert plt.get_fignums() == []  # refused before drawing


# ------------------------------------------------------------- sharp inline figures
def test_book_style_shows_notebook_figures_at_twice_the_pixels_and_natural_width():
    import io

    from IPython.core.interactiveshell import InteractiveShell
    from PIL import Image

    shell = InteractiveShell.instance()
    try:
        use_book_style()
        fig = plt.figure()
        fig.add_subplot().plot([0, 1])
        data, meta = shell.display_formatter.format(fig)
        width, height = Image.open(io.BytesIO(data["image/png"])).size
        assert meta["image/png"] == {
            "width": width // 2
        }  # no height: it would not scale
        once = io.BytesIO()
        fig.savefig(once, format="png", dpi=100)  # tight-cropped, like the inline one
        assert abs(width // 2 - Image.open(once).size[0]) <= 1
        plt.close(fig)
        empty = plt.figure()
        assert "image/png" not in shell.display_formatter.format(empty)[0]
        plt.close(empty)
    finally:
        InteractiveShell.clear_instance()
