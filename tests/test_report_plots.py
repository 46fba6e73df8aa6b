"""The report's plots as a reader sees them (issue 44, item 14): each figure plots.draw saves,
caught at Figure.savefig and read back as Agg drew it (tick labels, bars, whiskers, text
extents); expected values from the run's files or arithmetic, never from plots.py."""

import dataclasses
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from report_helpers import evbench

from evbench.report import plots
from evbench.report.context import RunContext, load_context

RUNS = ROOT / "tests" / "data" / "runs"
CODEC_LINK = RUNS / "codec-link-v1"  # a real quick run of both suites (tests/README.md)
CORE = RUNS / "core-v1"  # a codec-only run of the first agent, profile seed
#: A user schema's profile as `evbench run --schema` names it: schema:FULL.NAME.
LONG_PROFILE = "schema:com.example.vehicle.battery.v1.BatteryManagementSystemStatus"


def render(context: RunContext) -> dict[str, Figure]:
    """{plot name: the Figure plots.draw saved for it}, caught at Figure.savefig."""
    original = Figure.savefig
    saved: list[Figure] = []

    def spy(self: Figure, *args, **kwargs):
        saved.append(self)
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", spy)
        drawn = plots.draw(context)
    assert len(saved) == len(drawn)
    return {plot.name: figure for plot, figure in zip(drawn, saved, strict=True)}


def shown_axes(figure: Figure) -> list[Axes]:
    return [axis for axis in figure.axes if axis.get_visible()]


def y_tick_labels(axis: Axes) -> list[tuple[float, str]]:
    """(position, text) of each labelled y tick inside the axis' view, as drawn."""
    low, high = sorted(axis.get_ylim())
    return [
        (tick.get_loc(), tick.label1.get_text())
        for tick in axis.yaxis.get_major_ticks()
        if tick.label1.get_visible() and tick.label1.get_text() and low <= tick.get_loc() <= high
    ]


def assert_labelled_y_axis(axis: Axes) -> None:
    ticks = y_tick_labels(axis)
    assert len(ticks) >= 2, (axis.get_title(loc="left"), axis.get_ylim(), ticks)
    for position, text in ticks:  # each label says where its tick is (4 digits)
        shown = float(text.replace("\N{MINUS SIGN}", "-").replace(",", ""))
        assert math.isclose(shown, position, rel_tol=5e-4), (text, position)


def samples(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]


def legend_colours(figure: Figure) -> dict[str, str]:
    """{label: colour} of the figure's legend, as drawn."""
    (legend,) = figure.legends
    colours = {}
    for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True):
        colour = handle.get_facecolor() if isinstance(handle, Rectangle) else handle.get_color()
        colours[text.get_text()] = to_hex(colour)
    return colours


def bars(axis: Axes) -> list[Rectangle]:
    return [patch for patch in axis.patches if isinstance(patch, Rectangle)]


def test_codec_link_v1s_plots_are_labelled_whole_and_sized_as_the_text_says(tmp_path) -> None:
    codec_link = render(load_context(CODEC_LINK))  # drawn once for every check here
    # codec-link-v1's lateness spans 0.16 µs to 76 ms, five decades on a 1.5 inch panel:
    # matplotlib's LogLocator, given 1-2-5 subs, draws no tick once it must skip decades.
    panels = shown_axes(codec_link["lateness-time"])
    titles = [axis.get_title(loc="left") for axis in panels]
    assert titles == ["json periodic (6 phases)", "protobuf periodic (6 phases)"]
    for axis in panels:
        assert axis.get_yscale() == "log"
        assert_labelled_y_axis(axis)
    for axis in shown_axes(codec_link["rtt-time"]) + shown_axes(codec_link["codec-times"]):
        assert_labelled_y_axis(axis)  # the other log axes too
    # Every lateness between 55 and 95 µs: no 1, 2 or 5 x 10^k inside the view.
    context = load_context(CODEC_LINK)
    narrowed = [
        dataclasses.replace(s, values=[55e-6 + 40e-6 * (i % 11) / 10 for i in range(len(s.values))])
        if s.metric == "send_lateness"
        else s
        for s in context.samples()
    ]
    context = dataclasses.replace(context, _samples=narrowed)
    for axis in shown_axes(render(context)["lateness-time"]):
        low, high = sorted(axis.get_ylim())
        assert low > 50 and high < 100  # the view holds no 1-2-5 tick
        assert_labelled_y_axis(axis)
    for figure in [*render(load_context(CORE)).values(), *codec_link.values()]:
        assert_nothing_cut(figure)
    # tests/data/runs/core-v1: both size_deflate records carry params.zlib_level 6.
    context = load_context(CORE)
    caption = next(p.caption for p in plots.plans(context) if p.name == "codec-sizes")
    assert "Deflated: zlib level 6. " in caption
    context.records[:] = [dict(r, params={}) for r in context.records]  # a run without it
    caption = next(p.caption for p in plots.plans(context) if p.name == "codec-sizes")
    assert "zlib level" not in caption
    run = tmp_path / "run"
    shutil.copytree(CODEC_LINK, run)
    figure = codec_link["codec-sizes"]
    colours = legend_colours(figure)
    done = evbench("report", str(run))
    assert done.returncode == 0, done.stderr
    markdown = (run / "report.md").read_text()
    panels = {axis.get_title(): axis for axis in shown_axes(figure)}
    for metric, title in (("size", "Size"), ("size_deflate", "Size, deflated")):
        axis = panels[title]
        assert "mean" in axis.get_ylabel()
        values = {s["codec"]: s["values"] for s in samples(run) if s["metric"] == metric}
        texts = {t.get_text() for t in axis.texts}
        whiskers = [
            segment
            for collection in axis.collections
            if isinstance(collection, LineCollection)
            for segment in collection.get_segments()
        ]
        for bar in bars(axis):
            (codec,) = [c for c, colour in colours.items() if to_hex(bar.get_facecolor()) == colour]
            mean = statistics.fmean(values[codec])
            assert math.isclose(bar.get_height(), mean, rel_tol=1e-12), (codec, metric)
            written = f"{mean:.1f} B"  # how the answer and the tables write a size
            assert written in texts and written in markdown, (written, texts)  # the text's
            centre = bar.get_x() + bar.get_width() / 2
            (whisker,) = [s for s in whiskers if math.isclose(s[0][0], centre)]
            ends = sorted((whisker[0][1], whisker[1][1]))
            assert ends == [min(values[codec]), max(values[codec])]


def reordered(run: Path, tmp_path: Path, codecs: list[str]) -> RunContext:
    """The run with its spec naming `codecs` in that order, its samples reversed."""
    copy = tmp_path / f"{run.name}-{'-'.join(codecs)}"
    shutil.copytree(run, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["spec"]["codecs"] = codecs
    (copy / "manifest.json").write_text(json.dumps(manifest))
    lines = (copy / "samples.jsonl").read_text().splitlines()
    (copy / "samples.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    return load_context(copy)


def codec_colours_drawn(figures: dict[str, Figure]) -> dict[str, dict[str, str]]:
    """Per plot, {codec: colour} as drawn: legends for bars and CDF, the size bars' faces,
    the dots of each over-time panel (titled by its codec)."""
    drawn = {name: legend_colours(figures[name]) for name in ("codec-times", "codec-sizes")}
    drawn["rtt-cdf"] = {
        label.split(" ", 1)[0]: colour
        for label, colour in legend_colours(figures["rtt-cdf"]).items()
    }
    # The bars themselves: every JSON payload of codec-link-v1 is longer than every
    # Protobuf one (samples.jsonl), so the bars above Protobuf's largest size are JSON's.
    sizes = {s["codec"]: s["values"] for s in samples(CODEC_LINK) if s["metric"] == "size"}
    assert min(sizes["json"]) > max(sizes["protobuf"])
    (panel,) = [axis for axis in shown_axes(figures["codec-sizes"]) if axis.get_title() == "Size"]
    largest = max(sizes["protobuf"])
    drawn["size bars"] = {
        ("json" if bar.get_height() > largest else "protobuf"): to_hex(bar.get_facecolor())
        for bar in bars(panel)
    }
    assert len(bars(panel)) == 2
    for name in ("rtt-time", "lateness-time"):
        drawn[name] = {
            axis.get_title(loc="left").split(" ", 1)[0]: to_hex(axis.lines[0].get_color())
            for axis in shown_axes(figures[name])
        }
    return drawn


def test_each_codec_keeps_its_colour_whatever_the_order_unknown_ones_apart(tmp_path) -> None:
    # the third names first a codec more, which measured nothing here
    orders = (["json", "protobuf"], ["protobuf", "json"], ["orjson", "protobuf", "json"])
    first, *others = (
        codec_colours_drawn(render(reordered(CODEC_LINK, tmp_path, o))) for o in orders
    )
    assert others == [first, first]
    for colours in first.values():
        assert set(colours) == {"json", "protobuf"}
        assert colours["json"] != colours["protobuf"]
    # One colour per codec across every plot of the report.
    assert len({colours["json"] for colours in first.values()}) == 1
    assert len({colours["protobuf"] for colours in first.values()}) == 1
    # A codec added later, an A/A copy, a user's own: a colour each, apart, in whatever
    # order named, and the same in another process (whatever PYTHONHASHSEED).
    names = ["json", "json-aa", "zserio", "flatbuffers", "capnp", "my codec", "protobuf"]
    colours = plots.codec_colours(names)
    assert colours == plots.codec_colours(list(reversed(names)))
    assert len(set(colours.values())) == len(names)
    for known in ("json", "protobuf"):
        assert plots.codec_colours([known]) == {known: colours[known]}
    script = (
        "import json, sys; from evbench.report import plots; "
        "print(json.dumps(plots.codec_colours(json.loads(sys.argv[1]))))"
    )
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", script, json.dumps(names)],
            capture_output=True, text=True, check=True, env=dict(os.environ, PYTHONHASHSEED=seed),
        )  # fmt: skip
        assert json.loads(done.stdout) == colours


def undrawn_tick_labels(figure: Figure) -> set[int]:
    """The ids of tick labels outside their axis' view (kept by matplotlib, not drawn)."""
    undrawn = set()
    for axes in figure.axes:
        for axis, limits in ((axes.xaxis, axes.get_xlim()), (axes.yaxis, axes.get_ylim())):
            low, high = sorted(limits)
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low <= tick.get_loc() <= high:
                    undrawn |= {id(tick.label1), id(tick.label2)}
    return undrawn


def assert_nothing_cut(figure: Figure) -> None:
    """Every visible, non-empty text (tick labels, titles, axis labels, bar labels,
    legends, the figure's own labels) lies inside the figure's box once drawn."""
    figure.canvas.draw()
    renderer, box, undrawn = figure.canvas.get_renderer(), figure.bbox, undrawn_tick_labels(figure)
    outside = []
    for text in figure.findobj(Text):
        if not text.get_visible() or not text.get_text().strip() or id(text) in undrawn:
            continue
        extent = text.get_window_extent(renderer)
        inside_x = box.x0 - 0.5 <= extent.x0 and extent.x1 <= box.x1 + 0.5
        if not inside_x or not (box.y0 - 0.5 <= extent.y0 and extent.y1 <= box.y1 + 0.5):
            outside.append((text.get_text(), extent.bounds, box.bounds))
    assert not outside, outside


@pytest.mark.parametrize("plot", ["codec-times", "codec-sizes"])
def test_a_user_schemas_profile_name_is_not_cut(plot: str) -> None:
    context = load_context(CORE)
    context.records[:] = [dict(r, profile=LONG_PROFILE) for r in context.records]
    figure = render(context)[plot]
    assert_nothing_cut(figure)
    # the name is all there, in order, across the label's lines
    labels = [t.get_text() for t in shown_axes(figure)[0].get_xticklabels()]
    assert [label.replace("\n", "") for label in labels] == [LONG_PROFILE]
