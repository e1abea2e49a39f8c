#!/usr/bin/env python3
"""Plots ttft_report's JSON: TTFT gain % vs prompt length (log x), one line per rest-of-layer
setting, one panel per model (dashed/dotted lines for runs with background decodes).

usage: plot_ttft.py ttft.json [--out ttft.png]
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LINESTYLES = ["-", "--", ":", "-."]


def rest_label(us):
    if us == 0:
        return "rest of layer 0 (upper bound)"
    if us >= 1000:
        return f"rest of layer {us / 1000:g} ms"
    return f"rest of layer {us:g} us"


def token_label(t):
    return f"{t // 1024}K" if t % 1024 == 0 else str(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--out", help="default: ttft.png beside the JSON")
    args = ap.parse_args()
    with open(args.json) as f:
        doc = json.load(f)
    meta, results = doc.get("metadata", {}), doc.get("results", [])
    if not results:
        print(f"plot_ttft.py: no results in {args.json}", file=sys.stderr)
        return 1
    models = list(dict.fromkeys(r["model"] for r in results))
    rests = sorted({r["rest_of_layer_us"] for r in results})
    backgrounds = sorted({r["background_decodes"] for r in results})
    prompts = sorted({r["prompt_tokens"] for r in results})

    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4.5), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, model in zip(axes[0], models):
        for ci, rest in enumerate(rests):
            for bi, bg in enumerate(backgrounds):
                pts = sorted((r["prompt_tokens"], r["gain_pct"]) for r in results
                             if r["model"] == model and r["rest_of_layer_us"] == rest
                             and r["background_decodes"] == bg)
                if not pts:
                    continue
                label = rest_label(rest)
                if len(backgrounds) > 1:
                    label += f", {bg} background decodes"
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        color=colors[ci % len(colors)], linestyle=LINESTYLES[bi % len(LINESTYLES)],
                        label=label)
        layers = next(r["layers"] for r in results if r["model"] == model)
        ax.set_title(f"{model} ({layers} layers)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(prompts)
        ax.set_xticklabels([token_label(p) for p in prompts])
        ax.set_xlabel("prompt length (tokens)")
        ax.set_ylabel("TTFT gain of the cache (%)")
        ax.axhline(0, color="gray", linewidth=0.5)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    device = (f"{meta.get('gpu_name', '?')}, CUDA events" if meta.get("backend") == "cuda"
              else "CPU timings (host backend)")
    fig.suptitle(f"TTFT gain of the per-step index cache: {device}; "
                 f"{meta.get('chunk_tokens', '?')} tokens/step; commit {meta.get('git_commit', '?')}",
                 fontsize=10)
    fig.tight_layout()
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.json)), "ttft.png")
    fig.savefig(out, dpi=120)
    print(f"plot_ttft.py: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
