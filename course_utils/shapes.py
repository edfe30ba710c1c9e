"""The shape tracer: run one forward pass and list every submodule call with its input and output shapes.

`trace_shapes(model, src, src_lengths, tgt)` returns a ShapeTrace: a table in a notebook, plain text with `print`.
"""
import html
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

__all__ = ["ShapeTrace", "trace_shapes"]

_COLUMNS = ("module", "type", "call", "inputs", "outputs")


def _describe_shapes(value: Any) -> str:
    """A short text for the shapes inside `value` (tensors as (2, 5), containers recursively), else repr or type."""
    if isinstance(value, Tensor):
        return str(tuple(value.shape))
    if isinstance(value, PackedSequence):
        return f"PackedSequence(data={tuple(value.data.shape)}, batch_sizes={tuple(value.batch_sizes.shape)})"
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
        fields = ", ".join(f"{name}={_describe_shapes(item)}" for name, item in zip(value._fields, value, strict=True))
        return f"{type(value).__name__}({fields})"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_describe_shapes(item) for item in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}={_describe_shapes(item)}" for key, item in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return type(value).__name__


class _ShapeRow(NamedTuple):
    """One submodule call."""

    name: str  # dotted module name, e.g. "decoder.attention.query_layer"; "(model)" for the root
    type: str  # class name, e.g. "Linear"
    call: int  # 0 for the module's first call, 1 for its second (decoders call their layers once per step) ...
    depth: int  # nesting depth (0 = root), for indentation
    inputs: str  # shapes of the positional and keyword inputs, e.g. "(2, 5), (2,)"
    outputs: str  # shapes of the output


class ShapeTrace:
    """The rows of one forward pass in call order (parents first) and its output. Introduced in notebook 02."""

    def __init__(self, rows: list[_ShapeRow], output: Any = None):
        self.rows, self.output = rows, output

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def first_calls(self) -> "ShapeTrace":
        """Only each module's first call: one decoder step instead of T."""
        return ShapeTrace([row for row in self.rows if row.call == 0], self.output)

    def _cells(self, row: _ShapeRow) -> tuple[str, ...]:
        return ("  " * row.depth + row.name, row.type, str(row.call), row.inputs, row.outputs)

    def __str__(self) -> str:
        table = [_COLUMNS] + [self._cells(row) for row in self.rows]
        widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
        table.insert(1, tuple("-" * width for width in widths))
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in table]
        return "\n".join(line.rstrip() for line in lines)

    def __repr__(self) -> str:
        return f"ShapeTrace({len(self.rows)} calls)\n{self}"

    def _repr_html_(self) -> str:
        header = "".join(f"<th style='text-align:left'>{name}</th>" for name in _COLUMNS)
        body = "".join(
            f"<tr><td style='text-align:left;padding-left:{0.5 + 1.5 * row.depth}em'>{html.escape(row.name)}</td>"
            + "".join(f"<td style='text-align:left'><code>{html.escape(c)}</code></td>" for c in self._cells(row)[1:])
            + "</tr>" for row in self.rows)
        return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def trace_shapes(model: nn.Module, *args, **kwargs) -> ShapeTrace:
    """Run `model(*args, **kwargs)` under no_grad, one row per module call. Introduced in notebook 02.

    The hooks are removed afterwards, also when the forward pass raises."""
    rows: list[_ShapeRow] = []
    open_calls: list[int] = []  # row indices of the calls currently running (a stack)
    names = {module: name or "(model)" for name, module in model.named_modules()}
    calls = dict.fromkeys(names, 0)  # calls so far, per module
    handles = []

    def before(module, inputs, kw):
        described = ", ".join([_describe_shapes(x) for x in inputs] +
                              [f"{key}={_describe_shapes(x)}" for key, x in kw.items()])
        rows.append(_ShapeRow(names[module], type(module).__name__, calls[module], len(open_calls), described, ""))
        calls[module] += 1
        open_calls.append(len(rows) - 1)

    def after(module, inputs, kw, output):
        index = open_calls.pop()
        rows[index] = rows[index]._replace(outputs=_describe_shapes(output))

    try:
        for module in names:
            handles += [module.register_forward_pre_hook(before, with_kwargs=True),
                        module.register_forward_hook(after, with_kwargs=True)]
        with torch.no_grad():
            output = model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return ShapeTrace(rows, output)
