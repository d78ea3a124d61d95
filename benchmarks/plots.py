"""The curves of ``bench_curves.py`` as PNG files (matplotlib: the optional ``bench`` extra).

Two halves, so that the data side is testable without matplotlib:

* ``*_series`` turn a ``bench_curves.py`` JSON payload into plain series
  (``{label: [(x, y), ...]}``), which is what the figures show;
* :func:`render_all` draws them (importing matplotlib only then, with the non-interactive
  ``Agg`` backend) into ``size-sweep.png``, ``latency-percentiles.png`` and ``peers.png``
  under a directory, each with a caption line that says when, where and under what load
  the numbers were taken.
"""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path
from typing import Any

Series = dict[str, list[tuple[float, float]]]

FILES = {
    "size": "perf-size-sweep.png",
    "latency": "perf-latency-percentiles.png",
    "peers": "perf-peers.png",
}


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def size_series(payload: dict[str, Any]) -> tuple[Series, Series]:
    """msgs/s and MB/s against the message size, per implementation."""
    rates: Series = {}
    mbps: Series = {}
    for r in payload.get("size_sweep", []):
        if r.get("msgs_per_s"):
            rates.setdefault(r["impl"], []).append((r["size"], r["msgs_per_s"]))
            mbps.setdefault(r["impl"], []).append((r["size"], r["msgs_per_s"] * r["size"] / 1e6))
    for series in (rates, mbps):
        for points in series.values():
            points.sort()
    return rates, mbps


def cpu_series(payload: dict[str, Any]) -> Series:
    """CPU µs per message against the size, per implementation and side ("<impl> recv" and
    "<impl> send"): what a message costs, which a loaded machine moves far less than rates."""
    out: Series = {}
    for r in payload.get("size_sweep", []):
        for side, key in (("recv", "receiver"), ("send", "sender")):
            value = (r.get("cpu_us_per_msg") or {}).get(key)
            if value:
                out.setdefault(f"{r['impl']} {side}", []).append((r["size"], value))
    for points in out.values():
        points.sort()
    return out


def latency_series(payload: dict[str, Any]) -> Series:
    """Round-trip µs against the percentile, per case (median over rounds per percentile)."""
    out: Series = {}
    for r in payload.get("latency", []):
        rounds = [x["curve"] for x in r.get("rounds", []) if "curve" in x]
        if not rounds:
            continue
        points = []
        for q in rounds[0]:
            points.append((float(q), statistics.median(x[q] for x in rounds) / 1000))
        out[r["case"]] = sorted(points)
    return out


def peers_series(payload: dict[str, Any]) -> tuple[Series, Series]:
    """Aggregate msgs/s and receiver RSS KiB per connection against the peer count."""
    rates: Series = {}
    rss: Series = {}
    for r in payload.get("peers", []):
        if r.get("msgs_per_s"):
            rates.setdefault(r["impl"], []).append((r["peers"], r["msgs_per_s"]))
        if r.get("rss_per_connection_receiver") is not None:
            rss.setdefault(r["impl"], []).append(
                (r["peers"], r["rss_per_connection_receiver"] / 1024)
            )
    for series in (rates, rss):
        for points in series.values():
            points.sort()
    return rates, rss


def size_text(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def caption(payload: dict[str, Any]) -> str:
    env = payload.get("environment", {})
    load = env.get("loadavg") or ["?"]
    first = load[0] if isinstance(load[0], str) else f"{load[0]:.1f}"
    return (
        f"{env.get('date', '?')[:16]} UTC, {env.get('cpu_count', '?')} CPUs, load average "
        f"{first} at the start: a shared machine, loaded by other work; compare the curves "
        f"with each other, not with other runs ({payload.get('note', '')})"
    ).replace(" ()", "")


def render_all(payload: dict[str, Any], directory: Path) -> list[Path]:
    """Draw every figure the payload has data for; the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    def size_tick(value: float, _pos: object) -> str:
        return size_text(int(value))

    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    text = caption(payload)

    def finish(fig: Any, name: str) -> None:
        fig.text(0.01, 0.01, text, fontsize=7, wrap=True)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        path = directory / FILES[name]
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    rates, mbps = size_series(payload)
    if rates:
        fig, (left, right, cpu) = plt.subplots(1, 3, figsize=(15, 4.6))
        colors: dict[str, Any] = {}
        for label, points in rates.items():
            (line,) = left.plot(*zip(*points, strict=True), marker="o", label=label)
            colors[label] = line.get_color()
        for label, points in mbps.items():
            right.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[label])
        for label, points in cpu_series(payload).items():
            impl, side = label.rsplit(" ", 1)
            cpu.plot(
                *zip(*points, strict=True),
                marker="o" if side == "recv" else "x",
                linestyle="-" if side == "recv" else "--",
                color=colors.get(impl),
                label=f"{impl} ({'receiver' if side == 'recv' else 'sender'})",
            )
        cpu.set_title("CPU per message, user + sys")
        sizes = sorted({x for points in rates.values() for x, _ in points})
        for ax, ylabel in (
            (left, "messages/s"),
            (right, "MB/s (payload)"),
            (cpu, "CPU µs per message"),
        ):
            ax.tick_params(axis="x", labelrotation=35, labelsize=8)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(sizes)
            ax.xaxis.set_major_formatter(FuncFormatter(size_tick))
            ax.set_xlabel("message size")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7 if ax is cpu else 9)
        left.set_title("PUSH -> PULL over tcp, separate processes")
        right.set_title("throughput in bytes")
        finish(fig, "size")

    latency = latency_series(payload)
    if latency:
        fig, ax = plt.subplots(figsize=(8, 4.4))
        for label, points in latency.items():
            qs = [q for q, _ in points]
            ax.plot(range(len(qs)), [v for _, v in points], marker="o", label=label)
            ax.set_xticks(range(len(qs)), [f"p{q:g}" for q in qs])
        ax.set_ylabel("round trip (µs)")
        ax.set_yscale("log")
        ax.set_title("REQ -> REP 64 B round trip, percentiles (separate processes)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        finish(fig, "latency")

    peer_rates, rss = peers_series(payload)
    if peer_rates:
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4))
        for label, points in peer_rates.items():
            left.plot(*zip(*points, strict=True), marker="o", label=label)
        for label, points in rss.items():
            right.plot(*zip(*points, strict=True), marker="o", label=label)
        left.set_ylabel("aggregate messages/s at the PULL")
        right.set_ylabel("receiver RSS per connection (KiB)")
        left.set_title("many PUSH peers -> one PULL, 64 B")
        right.set_title("memory per connection")
        counts = sorted({x for points in peer_rates.values() for x, _ in points})
        right.set_yscale("log")
        for ax in (left, right):
            ax.set_xscale("log")
            ax.set_xticks(counts, [f"{c:g}" for c in counts])
            ax.set_xlabel("connections (the first one also pays one-off set-up)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        left.set_ylim(bottom=0)
        finish(fig, "peers")
    return written
