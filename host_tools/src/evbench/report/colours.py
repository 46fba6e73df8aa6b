"""Each codec's colour in every plot, decided by its name alone: a known codec's from
`CODEC_COLOURS`, an A/A copy (`json-aa`) a paler shade of its original, any other name
a colour of `FALLBACK_COLOURS` picked by a stable hash of the name (report/plots.py and
report/telemetry.py both colour by it)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from matplotlib import colors as mcolors

from evbench_core.analysis.identity import COPY_SUFFIX

#: Each known codec's colour, by name: the same in every plot of every report, whatever
#: else the run measured and in whatever order (matplotlib's tab10, then five darker
#: tones of tab20b for the native runtimes).
CODEC_COLOURS = {
    "json": "#1f77b4",
    "protobuf": "#ff7f0e",
    "protobuf-json": "#2ca02c",
    "orjson": "#d62728",
    "ujson": "#9467bd",
    "msgspec-json": "#8c564b",
    "msgspec-msgpack": "#e377c2",
    "msgpack": "#7f7f7f",
    "cbor2": "#bcbd22",
    "dbc": "#17becf",
    "c:protobuf-c": "#393b79",
    "c:cjson": "#637939",
    "c:nanopb": "#8c6d31",
    "cpp:protobuf": "#843c39",
    "cpp:nlohmann": "#7b4173",
}
#: Any other codec's colour: this palette's entry at the CRC-32 of its name (Python's
#: own hash() changes from one process to the next). None of them is in CODEC_COLOURS.
FALLBACK_COLOURS = (
    "#5254a3", "#8ca252", "#bd9e39", "#ad494a", "#a55194", "#3182bd", "#e6550d",
    "#31a354", "#756bb1", "#636363", "#6b6ecf", "#b5cf6b", "#e7ba52", "#d6616b",
    "#ce6dbd", "#9ecae1",
)  # fmt: skip


def _pale(colour: str) -> str:
    """`colour` halfway to white."""
    red, green, blue = mcolors.to_rgb(colour)
    return mcolors.to_hex(((1 + red) / 2, (1 + green) / 2, (1 + blue) / 2))


def codec_colours(codecs: Iterable[str]) -> dict[str, str]:
    """Each codec's colour, decided by its name alone (module docstring). Two unknown
    names whose hashes meet in one plot: the later in name order takes the palette's next
    free colour, so each plot's codecs stay apart."""
    colours: dict[str, str] = {}
    unknown = []
    for codec in dict.fromkeys(codecs):
        original = codec[: -len(COPY_SUFFIX)] if codec.endswith(COPY_SUFFIX) else None
        if codec in CODEC_COLOURS:
            colours[codec] = CODEC_COLOURS[codec]
        elif original in CODEC_COLOURS:
            colours[codec] = _pale(CODEC_COLOURS[original])
        else:
            unknown.append(codec)
    taken = set(colours.values())
    for codec in sorted(unknown):
        start = zlib.crc32(codec.encode("utf-8", "surrogatepass"))
        for step in range(len(FALLBACK_COLOURS)):
            colour = FALLBACK_COLOURS[(start + step) % len(FALLBACK_COLOURS)]
            if colour not in taken:
                break
        else:  # more unknown codecs than colours: the name's own colour, shared
            colour = FALLBACK_COLOURS[start % len(FALLBACK_COLOURS)]
        colours[codec] = colour
        taken.add(colour)
    return colours


__all__ = ["CODEC_COLOURS", "FALLBACK_COLOURS", "codec_colours"]
