"""A figure with a slider over precomputed frames: no kernel, no server, no file."""

from __future__ import annotations

import base64
import html
import io
import itertools

import matplotlib as mpl
import matplotlib.pyplot as plt
import PIL.Image

from ..utils import check_int
from .style import DPI, SHARPNESS

__all__ = ["frame_slider", "FrameSlider"]

_SLIDER_CSS = """<style>
.attnlib-slider{margin:0.5em 0;max-width:100%}
.attnlib-slider-control{display:flex;align-items:center;gap:0.6em;flex-wrap:wrap;
font-size:0.95em}
.attnlib-slider-control input[type=range]{flex:1 1 12em;min-width:8em;max-width:28em}
.attnlib-slider img{display:block;max-width:100%;height:auto}
.attnlib-slider img[hidden]{display:none}
@media print{.attnlib-slider-control{display:none}}
</style>"""

# Inline, so that it runs wherever the output is shown (a built page, Jupyter, Colab)
# without a kernel or a file: shows the chosen frame, hides the others, shows the value.
_SLIDER_JS = (
    "var r=this.closest('.attnlib-slider'),f=r.querySelectorAll('img.attnlib-frame'),"
    "i=+this.value;for(var k=0;k<f.length;k++){f[k].hidden=(k!==i);}"
    "r.querySelector('output').textContent=f[i].dataset.value;"
)

_slider_ids = itertools.count()


class FrameSlider:
    """A slider over precomputed figures, shown as self-contained HTML.

    Made by :func:`frame_slider`. Its HTML (``_repr_html_``) holds every frame as an
    inline PNG, an ``<input type="range">`` and a one-line inline script: no kernel,
    server or file is needed, so it works on the built website, in Jupyter and in Colab.
    Without script (or in print) the default frame is the one visible, and print hides
    the control.

    Parameters
    ----------
    frames : list of bytes
        The PNG images, one per value.
    labels : list of str
        The value of each frame, as shown next to the slider.
    label : str
        The parameter's name, shown before the slider.
    default : int
        Index of the frame shown first.
    alt : str
        Alternative text of the frames (the value is appended).
    size : tuple of int
        Width and height at which the frames show, in CSS pixels (the PNGs hold
        ``SHARPNESS`` times as many).
    """

    def __init__(self, frames, labels, label, default, alt, size):
        self.frames = frames
        self.labels = labels
        self.label = label
        self.default = default
        self.alt = alt
        self.size = size
        self.id = f"attnlib-slider-{next(_slider_ids)}-{id(self):x}"

    def __repr__(self) -> str:
        return (
            f"FrameSlider({self.label}: {len(self.frames)} frames, "
            f"{self.labels[0]} to {self.labels[-1]})"
        )

    def _repr_html_(self) -> str:
        """The widget: control, then every frame, the default one visible."""
        w, h = self.size
        esc = html.escape
        imgs = []
        for i, (png, value) in enumerate(zip(self.frames, self.labels)):
            data = base64.b64encode(png).decode("ascii")
            alt = f"{self.alt} ({self.label} = {value})" if self.alt else ""
            imgs.append(
                f'<img class="attnlib-frame" src="data:image/png;base64,{data}" '
                f'width="{w}" height="{h}" alt="{esc(alt)}" data-value="{esc(value)}"'
                f"{'' if i == self.default else ' hidden'}>"
            )
        return (
            f'{_SLIDER_CSS}<div class="attnlib-slider" id="{self.id}">'
            '<div class="attnlib-slider-control">'
            f'<label for="{self.id}-input">{esc(self.label)}</label>'
            f'<input type="range" id="{self.id}-input" min="0" '
            f'max="{len(self.frames) - 1}" step="1" value="{self.default}" '
            f'aria-label="{esc(self.label)}" oninput="{esc(_SLIDER_JS)}">'
            f'<output for="{self.id}-input">{esc(self.labels[self.default])}</output>'
            "</div>" + "".join(imgs) + "</div>"
        )

    def _repr_png_(self) -> bytes:
        """The default frame, for renderers that show no HTML."""
        return self.frames[self.default]


def _union_bbox(figures):
    """The box (inches) holding every figure whole and whatever sticks out of it.

    Not the tight box: that would crop each figure's margins, and a frame drawn at the
    column's width would come out narrower than the column.
    """
    boxes = [figures[0].bbox_inches]
    for fig in figures:
        boxes.append(fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.05))
    return mpl.transforms.Bbox.union(boxes)


def frame_slider(
    draw,
    values,
    *,
    label: str,
    default=None,
    fmt: str = "{:g}",
    alt: str = "",
    dpi: int = DPI,
) -> FrameSlider:
    """A figure with a slider over a parameter, precomputed: no kernel is needed.

    Calls ``draw(value)`` for each value, renders each figure to a PNG (all frames the
    same size, at ``dpi``: a figure as wide as the column displays at its natural
    size; the PNG holds ``SHARPNESS`` times the pixels, for high-density screens),
    closes them, and returns a :class:`FrameSlider` whose HTML shows the
    default frame and a slider that swaps frames in the browser. Give the cell that
    shows it the usual figure metadata (``mystnb.figure.caption`` and ``name``); the
    ``alt`` text goes here, because the frames are HTML, not a figure output.

    Parameters
    ----------
    draw : callable
        ``draw(value)`` returns a matplotlib Figure (draw it at the column's width,
        ``figsize=(COLUMN_INCHES, h)``).
    values : sequence
        The parameter's values, in slider order (at least 2, at most 40).
    label : str
        The parameter's name as the reader knows it, e.g. ``"temperature T"``.
    default : value, optional
        The value shown first, in print and without script (default: the middle one).
    fmt : str
        Format of a value next to the slider, e.g. ``"{:.2f}"``.
    alt : str
        Alternative text of the figure, in words (the value is appended per frame).
    dpi : int
        Dots per inch of the frames.

    Returns
    -------
    FrameSlider
        Shows itself as HTML in a notebook and on the built page.
    """
    if not callable(draw):
        raise ValueError(f"draw must be callable, got {type(draw).__name__}")
    values = list(values)
    if not 2 <= len(values) <= 40:
        raise ValueError(f"values must hold 2 to 40 values, got {len(values)}")
    if not isinstance(label, str) or not label.strip():
        raise ValueError(f"label must be a non-empty string, got {label!r}")
    dpi = check_int(dpi, "dpi")
    if not 20 <= dpi <= 400:
        raise ValueError(f"dpi must be between 20 and 400, got {dpi}")
    try:
        labels = [fmt.format(v) for v in values]
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise ValueError(f"fmt {fmt!r} cannot format the values: {err}") from err
    if default is None:
        index = (len(values) - 1) // 2
    else:
        matches = [i for i, v in enumerate(values) if v is default or v == default]
        if not matches:
            raise ValueError(f"default must be one of values, got {default!r}")
        index = matches[0]
    figures = []
    try:
        for v in values:
            fig = draw(v)
            if not isinstance(fig, mpl.figure.Figure):
                raise ValueError(
                    f"draw must return a matplotlib Figure, got {type(fig).__name__}"
                )
            fig.set_dpi(dpi)
            figures.append(fig)
        box = _union_bbox(figures)
        frames = []
        for fig in figures:
            buf = io.BytesIO()
            # SHARPNESS times the pixels, shown at the natural size: sharp on a phone
            fig.savefig(buf, format="png", dpi=SHARPNESS * dpi, bbox_inches=box)
            frames.append(buf.getvalue())
    finally:
        for fig in figures:
            plt.close(fig)
    with PIL.Image.open(io.BytesIO(frames[0])) as first:
        size = tuple(n // SHARPNESS for n in first.size)
    return FrameSlider(frames, labels, label, index, alt, size)
