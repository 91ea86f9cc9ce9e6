"""What ONNX Runtime's transformer optimizer fused in each teacher's graph (issue 42).

    python bench/speed/onnx_fusions.py --teachers minilm mpnet --out bench/results/onnx_fusions.md

Loads each teacher with ``--backend onnx`` at float32 and int8 (exporting the graphs into the user
cache when they are not there yet) and counts the graph's operators: one ``Attention``
(``QAttention`` once quantized) per layer means the attention was fused; ``MatMul`` left over are
the unfused attention products and the projections. Explains ``onnx_teacher.md``'s speeds: a graph
whose attention is not fused runs the same kernels as torch, one op at a time.
A closing section headed "## What it means" in an existing ``--out`` (the reading written by hand
after a run) is kept below the new tables.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import sys
from pathlib import Path

import onnx
from machine import argv_line, write_keeping_reading

from ctx2static.pipeline.config import TeacherConfig
from ctx2static.pipeline.teacher import Teacher

SHOWN = (
    "Attention",
    "QAttention",
    "SkipLayerNormalization",
    "LayerNormalization",
    "BiasGelu",
    "MatMul",
    "MatMulInteger",
    "Softmax",
    "DynamicQuantizeLinear",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--teachers", nargs="+", default=["minilm", "mpnet"])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    lines = [
        "# ONNX Runtime's fusions in each teacher's graph",
        "",
        f"Date: {datetime.date.today()}. Command (repository root): `python {argv_line(sys.argv)}`",
        "",
        "Operators of the graph `--backend onnx` runs (exported by the product into the user cache), "
        "per precision. Fused attention: one `Attention` (float32) or `QAttention` (int8) per layer.",
        "",
        f"| teacher | layers | precision | nodes | {' | '.join(SHOWN)} |",
        "|---|---:|---|---:|" + "---:|" * len(SHOWN),
    ]
    for name in args.teachers:
        for precision in ("float32", "int8"):
            teacher = Teacher.load(name, TeacherConfig(backend="onnx", precision=precision))
            assert teacher.onnx is not None
            graph = onnx.load(str(teacher.onnx.path), load_external_data=False).graph
            ops = collections.Counter(n.op_type for n in graph.node)
            layers = teacher.model.config.num_hidden_layers
            counts = " | ".join(str(ops.get(op, 0)) for op in SHOWN)
            lines.append(f"| {name} | {layers} | {precision} | {len(graph.node)} | {counts} |")
            del teacher
    print("\n".join(lines))
    write_keeping_reading(args.out, "\n".join(lines))


if __name__ == "__main__":
    main()
