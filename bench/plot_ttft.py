#!/usr/bin/env python3
"""Plots ttft_report's JSON: TTFT gain % vs prompt length (log x), one panel per model and
SPEC §8 sharing mode (a row of panels per mode), one colour per rest-of-layer duration; solid
lines for the busy-wait stand-in (and rest 0, which runs none), dashed for the streaming
stand-in of the same duration (it evicts the L2); marker shapes tell background-decode
settings apart when there are several.

usage: plot_ttft.py ttft.json [--out ttft.png]
Reads JSON from before the stand_in column (every rest > 0 was a busy-wait then) and from
before the mode column (every row was the seed's cache then).
"""
import argparse
import gzip
import json
import os
import sys

try:
    import matplotlib
except ImportError:
    sys.exit("plot_ttft.py: needs matplotlib (pip install matplotlib, or apt-get install python3-matplotlib)")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STAND_IN_STYLE = {"none": "-", "busy-wait": "-", "streaming": "--"}
STAND_IN_ORDER = {"none": 0, "busy-wait": 1, "streaming": 2}
MARKERS = ["o", "s", "^", "D", "v"]


def stand_in(r):
    """The row's stand-in; JSON from before the column had only the busy-wait."""
    return r.get("stand_in", "none" if r["rest_of_layer_us"] == 0 else "busy-wait")


def mode(r):
    """The row's sharing mode; JSON from before the column had only the seed's cache."""
    return r.get("mode", "seed")


def rest_label(us, who):
    if us == 0:
        return "rest of layer 0 (upper bound)"
    amount = f"{us / 1000:g} ms" if us >= 1000 else f"{us:g} us"
    return f"rest of layer {amount}, {who}"


def token_label(t):
    return f"{t // 1024}K" if t % 1024 == 0 else str(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--out", help="default: ttft.png beside the JSON")
    args = ap.parse_args()
    with (gzip.open(args.json, "rt") if args.json.endswith(".gz") else open(args.json)) as f:
        doc = json.load(f)
    meta, results = doc.get("metadata", {}), doc.get("results", [])
    if not results:
        print(f"plot_ttft.py: no results in {args.json}", file=sys.stderr)
        return 1
    models = list(dict.fromkeys(r["model"] for r in results))
    modes = list(dict.fromkeys(mode(r) for r in results))
    rests = sorted({r["rest_of_layer_us"] for r in results})
    stand_ins = sorted({stand_in(r) for r in results}, key=lambda s: STAND_IN_ORDER.get(s, 9))
    backgrounds = sorted({r["background_decodes"] for r in results})
    prompts = sorted({r["prompt_tokens"] for r in results})

    fig, axes = plt.subplots(len(modes), len(models), figsize=(6.5 * len(models), 5 * len(modes)),
                             squeeze=False, sharey="col")  # a model's modes on one scale
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    panels = [(ax, model, m) for row, m in zip(axes, modes) for ax, model in zip(row, models)]
    for ax, model, m in panels:
        for ci, rest in enumerate(rests):
            for who in stand_ins:
                for bi, bg in enumerate(backgrounds):
                    pts = sorted((r["prompt_tokens"], r["gain_pct"]) for r in results
                                 if r["model"] == model and r["rest_of_layer_us"] == rest
                                 and stand_in(r) == who and r["background_decodes"] == bg
                                 and mode(r) == m)
                    if not pts:
                        continue
                    label = rest_label(rest, who)
                    if len(backgrounds) > 1:
                        label += f", {bg} background decodes"
                    ax.plot([p[0] for p in pts], [p[1] for p in pts],
                            marker=MARKERS[bi % len(MARKERS)], color=colors[ci % len(colors)],
                            linestyle=STAND_IN_STYLE.get(who, ":"), label=label)
        layers = next(r["layers"] for r in results if r["model"] == model)
        ax.set_title(f"{model} ({layers} layers), {m} mode")
        ax.set_xscale("log", base=2)
        ax.set_xticks(prompts)
        ax.set_xticklabels([token_label(p) for p in prompts])
        ax.set_xlabel("prompt length (tokens)")
        ax.set_ylabel("TTFT gain over uncached (%)")
        ax.axhline(0, color="gray", linewidth=0.5)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    device = (f"{meta.get('gpu_name', '?')}, CUDA events" if meta.get("backend") == "cuda"
              else "CPU timings (host backend)")
    styles = "solid: busy-wait stand-in, dashed: streaming stand-in (evicts L2)"
    if "streaming" not in stand_ins:
        styles = "rest of layer: busy-wait stand-in"
    fig.suptitle(f"TTFT gain of the per-step index cache, per sharing mode: {device}; "
                 f"{meta.get('chunk_tokens', '?')} tokens/step; commit {meta.get('git_commit', '?')}\n"
                 f"{styles}", fontsize=10)
    fig.tight_layout()
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.json)), "ttft.png")
    fig.savefig(out, dpi=120)
    print(f"plot_ttft.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
