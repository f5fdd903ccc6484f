"""Evidence for an exception raised by a learner's Python function (labs 08b-13): the failing
line of the learner's cell, the values its names held when it failed, and what those values
say about the cause.

Every torch-based and function checker used to answer an exception it did not anticipate with
"run it in a cell of its own to see the full error." The hint here is read from evidence that any
such error leaves, not from a list of expected wrong programs: the innermost frame of the
learner's cell in the traceback (its line and its local values), the exception's type and its
own words (an attribute name, a type name, a mask's shape), and the source of the cell (where a
name that is ``None`` on the failing line was set). A rule names a cause only when the values
show it (``layout`` is a dict that holds ``'dp'``; ``real`` is a 2 x 8 boolean mask indexing a
tensor of 16 elements); otherwise the values themselves are shown, which is evidence the learner
can use, and the hint stays generic.

:func:`explain` returns ``(what was seen, hint)``; the chapters call it where their own hints
name nothing (``ch08b_primer._raised``, ``ch10_planner._call``, ``ch11_profile``,
``_numeric.function_exercise``).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import difflib
import inspect
import linecache
import re

from ._errors import _learner_frame, parse_line

#: Methods that change a list, dict or set in place and return None.
_IN_PLACE_NONE = {
    "append",
    "extend",
    "insert",
    "sort",
    "reverse",
    "shuffle",
    "update",
    "add",
    "clear",
    "remove",
}
#: Tensor methods a learner calls on a Python list or number by mistake.
_TENSOR_ONLY = {"tolist", "item", "sum", "mean", "backward", "to", "cpu", "detach", "numpy"}


def _filename(function) -> str | None:
    code = getattr(function, "__code__", None)
    return getattr(code, "co_filename", None)


def learner_frame(error: BaseException, function):
    """(frame, line number) of the innermost frame of the learner's cell (the file of
    ``function``) in the error's traceback, or (None, None)."""
    code = getattr(function, "__code__", None)
    found = _learner_frame(error.__traceback__, code) if code is not None else None
    return (found.tb_frame, found.tb_lineno) if found is not None else (None, None)


def where(error: BaseException, function) -> str:
    """' at line N: `text`' for the learner's failing line, or ''."""
    frame, line = learner_frame(error, function)
    if frame is None:
        return ""
    text = linecache.getline(frame.f_code.co_filename, line).strip()
    return f" at line {line}" + (f": `{text}`" if text else "")


def line_values(error: BaseException, function) -> dict[str, object]:
    """The values of the names on the learner's failing line, as its frame held them when the
    error was raised (locals first, then the cell's globals)."""
    frame, line = learner_frame(error, function)
    if frame is None:
        return {}
    tree = _statement_tree(frame.f_code.co_filename, line)
    if tree is None:
        return {}
    names = dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name))
    found = {}
    for name in names:
        if name in frame.f_locals:
            found[name] = frame.f_locals[name]
        elif name in frame.f_globals and not inspect.ismodule(frame.f_globals[name]):
            found[name] = frame.f_globals[name]
    return found


def _tensor_words(value) -> str | None:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None or not hasattr(value, "ndim"):
        return None
    kind = str(dtype).removeprefix("torch.")
    if value.ndim == 0:
        return f"a single number ({kind})"
    return f"{' x '.join(map(str, shape))} ({kind})"


def describe_value(value) -> str | None:
    """A few words on a value: a tensor's shape and dtype, a number, None, a list's length and
    what it holds, a dict's keys, an object's class; None for functions, classes and modules."""
    tensor = _tensor_words(value)
    if tensor is not None:
        return tensor
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"the Python bool {value}"
    if isinstance(value, int):
        return f"the Python int {value}"
    if isinstance(value, float):
        return f"the Python float {value:g}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list | tuple):
        kinds = {type(v).__name__ for v in value}
        inner = f" of {len(value)} {kinds.pop()}s" if len(kinds) == 1 else f" of {len(value)} items"
        return f"a Python {type(value).__name__}{inner if value else ' (empty)'}"
    if isinstance(value, dict):
        keys = ", ".join(repr(k) for k in list(value)[:6])
        more = ", ..." if len(value) > 6 else ""
        return f"a dict with keys {keys}{more}" if value else "an empty dict"
    if inspect.isroutine(value) or inspect.isclass(value) or inspect.ismodule(value):
        return None
    return f"a {type(value).__name__}"


def described(values: dict[str, object]) -> str:
    """'`real` is 2 x 8 (bool); `per_token` is 16 (float32)' for the values that say something."""
    parts = []
    for name, value in values.items():
        words = describe_value(value)
        if words is not None:
            parts.append(f"`{name}` is {words}")
    return "; ".join(parts)


def _fields(value) -> list[str]:
    """The public data attributes of an object (a dataclass's fields first)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        properties = [
            n
            for n, a in vars(type(value)).items()
            if isinstance(a, property) and not n.startswith("_")
        ]
        return [f.name for f in dataclasses.fields(value)] + properties
    if hasattr(value, "_fields"):  # a namedtuple
        return list(value._fields)
    names = []
    for name in dir(value):
        if name.startswith("_"):
            continue
        try:
            attribute = getattr(value, name)
        except Exception:
            continue
        if not callable(attribute):
            names.append(name)
    return names


def _evaluate(node: ast.AST, frame):
    """The value of a simple expression of the failing line (a name, ``x.attr``, ``x[0]``,
    ``x['key']``) read from the frame, or raises LookupError; nothing is called."""
    if isinstance(node, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, vars(builtins)):
            if node.id in scope:
                return scope[node.id]
        raise LookupError(node.id)
    if isinstance(node, ast.Attribute):
        base = _evaluate(node.value, frame)
        plain = inspect.ismodule(base) or not dataclasses.is_dataclass(base)
        if plain and node.attr not in getattr(base, "__dict__", {}):
            raise LookupError(node.attr)  # only stored values: no property runs
        return getattr(base, node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = _evaluate(node.value, frame)
        if isinstance(base, list | tuple | dict):
            try:
                return base[node.slice.value]
            except (IndexError, KeyError, TypeError) as error:
                raise LookupError(str(error)) from None
    raise LookupError(ast.dump(node))


def _statement_tree(filename: str, line: int) -> ast.Module | None:
    """The failing line parsed on its own, or, for a statement over several lines (a call
    whose arguments go on), that whole statement from the cell's source."""
    tree = parse_line(linecache.getline(filename, line))
    if tree is not None:
        return tree
    try:
        cell = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        return None
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)
    for node in ast.walk(cell):
        if isinstance(node, simple) and node.lineno == line:
            return ast.Module([node], [])
    return None


def _line_tree(frame, line) -> ast.Module | None:
    if frame is None:
        return None
    return _statement_tree(frame.f_code.co_filename, line)


def _values_of_type(tree, frame, type_name: str) -> list[tuple[str, object]]:
    """(source, value) of the simple expressions on the line whose value's class is
    ``type_name``, outermost first."""
    found = []
    if tree is None:
        return found
    for node in ast.walk(tree):
        if not isinstance(node, ast.Name | ast.Attribute | ast.Subscript):
            continue
        try:
            value = _evaluate(node, frame)
        except Exception:
            continue
        if type(value).__name__ == type_name:
            found.append((ast.unparse(node), value))
    return found


def _assignment(frame, line: int, name: str) -> tuple[int, str, ast.AST] | None:
    """(line, text, value expression) of the last assignment to ``name`` before ``line`` in the
    learner's cell, or None."""
    filename = frame.f_code.co_filename
    source = "".join(linecache.getlines(filename))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            value = node.iter if isinstance(node, ast.For) else node.value
            later = best is None or node.lineno > best[0]
            if name in names and node.lineno < line and value is not None and later:
                text = linecache.getline(filename, node.lineno).strip()
                best = (node.lineno, text, value)
    return best


def _unpassed_none_parameters(callee, call: ast.Call) -> list[str]:
    """Parameters of a module's forward (or a function) left to their default None by ``call``."""
    target = getattr(callee, "forward", callee)
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return []
    passed = len(call.args)
    keywords = {k.arg for k in call.keywords}
    missing = []
    for k, p in enumerate(parameters):
        if p.default is None and k >= passed and p.name not in keywords:
            missing.append(p.name)
    return missing


def _none_operand(frame, line, tree) -> tuple[str, str] | None:
    nones = [
        n.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id in frame.f_locals and frame.f_locals[n.id] is None
    ]
    if not nones:
        return None
    name = nones[0]
    seen = f"On that line `{name}` is None."
    found = _assignment(frame, line, name)
    if found is None:
        return seen, (
            f"find where `{name}` gets its value: a function that ends without `return` (or a "
            "method that changes its object in place) gives None."
        )
    at, text, value = found
    seen = f"On that line `{name}` is None; it was set at line {at}: `{text}`."
    if isinstance(value, ast.Call):
        called = ast.unparse(value.func)
        method = value.func.attr if isinstance(value.func, ast.Attribute) else None
        if method in _IN_PLACE_NONE:
            return seen, (
                f"`.{method}(...)` changes its object in place and returns None: call it on a "
                f"line of its own and keep using the object itself."
            )
        try:
            callee = _evaluate(value.func, frame)
        except Exception:
            callee = None
        missing = _unpassed_none_parameters(callee, value) if callee is not None else []
        if missing:
            listed = ", ".join(f"`{m}`" for m in missing)
            one = len(missing) == 1
            given = [ast.unparse(a) for a in value.args] + [ast.unparse(k) for k in value.keywords]
            example = f"{called}({', '.join(given + missing)})"
            return seen, (
                f"`{called}(...)` was called without {listed}, which default"
                f"{'s' if one else ''} to None, and then returns None for what depends on "
                f"{'it' if one else 'them'}: pass {listed} (`{example}`), or compute that value "
                "yourself from what the call does return."
            )
        return seen, (
            f"`{called}(...)` returned None for `{name}` here: check what it returns in this case "
            "(a function that ends without `return` returns None)."
        )
    return seen, f"check where `{name}` is set: it holds None when that line runs."


def _not_callable(frame, line, tree, type_name: str) -> tuple[str, str] | None:
    if tree is None:
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for call in calls:  # the called object itself is of that type
        try:
            value = _evaluate(call.func, frame)
        except Exception:
            continue
        if type(value).__name__ != type_name:
            continue
        name = ast.unparse(call.func)
        words = describe_value(value) or f"a {type_name}"
        if isinstance(call.func, ast.Name) and hasattr(builtins, call.func.id):
            return (
                f"On that line `{name}` is {words}, not Python's `{name}()`.",
                f"an earlier line gave the name `{name}` to a value, which hides Python's "
                f"built-in `{name}()`: rename that variable.",
            )
        return (
            f"On that line `{name}` is {words}, not a function.",
            f"`{name}(...)` calls it: use its value without the call, or define `{name}` as "
            "a function (`def ...`).",
        )
    for call in calls:  # a function on the line called an argument of that type
        for argument in call.args:
            try:
                value = _evaluate(argument, frame)
            except Exception:
                continue
            if type(value).__name__ != type_name:
                continue
            called, given = ast.unparse(call.func), ast.unparse(argument)
            if isinstance(call.func, ast.Attribute) and call.func.attr == "step":
                return (
                    f"`{called}({given})` gave `{given}` ({describe_value(value)}) to the "
                    "optimizer's step, which calls it.",
                    "`optimizer.step()` takes no loss: its only argument is an optional "
                    "closure, a function that recomputes the loss. Call `loss.backward()`, then "
                    "`optimizer.step()` with no argument.",
                )
            return (
                f"`{called}(...)` was given `{given}` ({describe_value(value)}) and called it.",
                f"that argument of `{called}` must be a function (something it can call), not "
                f"{describe_value(value) or 'this value'}.",
            )
    return None


def _no_attribute(frame, line, tree, type_name: str, attribute: str) -> tuple[str, str] | None:
    candidates = _values_of_type(tree, frame, type_name)
    if not candidates:
        return None
    source, value = candidates[0]
    words = describe_value(value) or f"a {type_name}"
    seen = f"On that line `{source}` is {words}, which has no `.{attribute}`."
    if isinstance(value, dict) and attribute in ("add", "discard", "union") and not value:
        return seen, (
            f"`.{attribute}(...)` is a set's method, and `{source}` is a dict (`{{}}` makes an "
            "empty dict, not an empty set): make an empty set with `set()`."
        )
    if isinstance(value, dict):
        if attribute in value:
            return seen, (
                f"read a dict's entries with brackets: `{source}['{attribute}']`, not "
                f"`{source}.{attribute}`."
            )
        close = difflib.get_close_matches(attribute, [str(k) for k in value], n=3)
        keys = ", ".join(repr(k) for k in (close or list(value)[:8]))
        return seen, f"read a dict's entries with brackets, `{source}[key]`" + (
            f"; its keys include {keys}." if keys else " (this one is empty)."
        )
    if isinstance(value, list | tuple) and attribute in _TENSOR_ONLY:
        return seen, (
            f"`.{attribute}()` is a tensor's method and `{source}` is a Python "
            f"{type(value).__name__}: use it as it is (its items are already Python values), or "
            f"turn it into a tensor first with `torch.tensor({source})` / `torch.stack({source})`."
        )
    if isinstance(value, int | float) and attribute in _TENSOR_ONLY:
        return seen, (
            f"`{source}` is already a Python number (`.item()` or `float(...)` made it one): use "
            "it as it is, or keep the tensor where a tensor is needed."
        )
    fields = _fields(value)
    if not fields:
        return None
    close = difflib.get_close_matches(attribute, fields, n=3, cutoff=0.5)
    if attribute in ("name", "label", "title", "id"):  # the attributes that hold text first
        texts = [f for f in fields if isinstance(getattr(value, f, None), str)]
        fields = texts + [f for f in fields if f not in texts]
        close = close or [f for f in ("key", "name", "label", "title") if f in texts]
    listed = ", ".join(f"`{f}`" for f in fields[:12]) + (", ..." if len(fields) > 12 else "")
    hint = f"a {type(value).__name__}'s attributes are {listed}"
    if close:
        hint += f" (the closest to `{attribute}`: `{close[0]}`)"
    return seen, hint + "."


def _not_subscriptable(frame, line, tree, type_name: str) -> tuple[str, str] | None:
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        try:
            value = _evaluate(node.value, frame)
        except Exception:
            continue
        if type(value).__name__ != type_name:
            continue
        source = ast.unparse(node.value)
        words = describe_value(value) or f"a {type_name}"
        seen = f"On that line `{source}` is {words}, which cannot be indexed with [...]."
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        if isinstance(key, str) and hasattr(value, key):
            return seen, (
                f"read its fields as attributes: `{source}.{key}`, not `{source}['{key}']`."
            )
        fields = _fields(value)
        if fields:
            listed = ", ".join(f"`{f}`" for f in fields[:12])
            return seen, f"read a {type_name}'s fields as attributes (`{source}.name`): {listed}."
        return seen, ""
    return None


def _object_operand(frame, tree, types: tuple[str, str]) -> tuple[str, str] | None:
    """An object (not a number) in arithmetic: its numeric fields, a ``total`` first."""
    for type_name in types:
        if type_name in ("int", "float", "NoneType", "Tensor", "str", "list", "tuple", "dict"):
            continue
        candidates = _values_of_type(tree, frame, type_name)
        if not candidates:
            continue
        source, value = candidates[0]
        numeric = [f for f in _fields(value) if isinstance(getattr(value, f, None), int | float)]
        if not numeric:
            return None
        numeric.sort(key=lambda f: f != "total")
        listed = ", ".join(f"`{source}.{f}`" for f in numeric[:8])
        return (
            f"On that line `{source}` is a {type_name}, an object holding several numbers, not "
            "a number.",
            f"use the number you mean from its fields: {listed}.",
        )
    return None


def _spread_keywords(frame, tree, keyword: str) -> tuple[str, str] | None:
    """``f(**d)`` where ``f`` takes ``d`` itself: the dict's keys became keyword arguments."""
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)) if tree else ():
        spread = [k for k in call.keywords if k.arg is None]
        if not spread:
            continue
        name = ast.unparse(call.func)
        given = ast.unparse(spread[0].value)
        try:
            parameters = list(inspect.signature(_evaluate(call.func, frame)).parameters)
        except Exception:
            parameters = []
        takes = f" `{name}` takes ({', '.join(parameters)})." if parameters else ""
        return (
            f"`**{given}` turns each key of `{given}` into a keyword argument ({keyword}=...)."
            + takes,
            f"pass the dict itself, `{name}({given})`, when the function takes the whole dict; "
            "`**` is for a function whose parameters are the dict's keys.",
        )
    return None


def _unpacked_tuple(frame, line, tree) -> tuple[str, str] | None:
    """A name holding the whole tuple a call returned, used as one of its items."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        value = frame.f_locals.get(node.value.id)
        if not isinstance(value, tuple):
            continue
        name = node.value.id
        found = _assignment(frame, line, name)
        items = ", ".join(describe_value(v) or type(v).__name__ for v in value[:4])
        seen = f"On that line `{name}` is a tuple of {len(value)} items ({items})"
        if found is not None and isinstance(found[2], ast.Call):
            called = ast.unparse(found[2].func)
            seen += f", the whole of what `{called}(...)` returned at line {found[0]}"
            names = ", ".join([name] + ["_"] * (len(value) - 1))
            return seen + ".", (
                f"`{called}(...)` returns {len(value)} values: unpack them, "
                f"`{names} = {called}(...)`, to get the one you want."
            )
        return seen + ".", f"take the item you want out of `{name}` (e.g. `{name}[0]`)."
    return None


def _flattened_by_mask(values: dict, tree) -> tuple[str, str] | None:
    """A boolean mask on the line, whose indexing flattens a tensor to one dimension."""
    for node in ast.walk(tree) if tree is not None else ():
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name)):
            continue
        mask = values.get(node.slice.id)
        if _tensor_words(mask) is None or "bool" not in str(mask.dtype) or mask.ndim < 2:
            continue
        text = ast.unparse(node)
        return (
            f"On that line `{text}` picks the elements where `{node.slice.id}` "
            f"({_tensor_words(mask)}) is True into one flat 1-d tensor: the "
            f"{' x '.join(map(str, mask.shape))} shape is gone.",
            "indexing with a boolean mask always flattens; keep the tensor's shape where a "
            "function needs it (a model takes (batch, seq) token ids) and leave out the masked "
            "positions another way (targets of -100 are ignored by `F.cross_entropy`).",
        )
    return None


def _linear_sizes(frame, tree, text: str = "") -> tuple[str, str] | None:
    """The linear layers called on the line, with the features each takes and gives (and, from
    torch's "(AxB and CxD)", which of them got B features where it takes C)."""
    import torch

    layers = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)) if tree else ():
        try:
            module = _module_at(call.func, frame)
        except Exception:
            continue
        if isinstance(module, torch.nn.Linear):
            layers.append((ast.unparse(call.func), module))
    if not layers:
        return None
    said = "; ".join(
        f"`{name}` takes {m.in_features} features and gives {m.out_features}" for name, m in layers
    )
    sizes = re.search(r"\((\d+)x(\d+) and (\d+)x(\d+)\)", text)
    if sizes:
        got, takes = int(sizes.group(2)), int(sizes.group(3))
        hit = [name for name, m in layers if m.in_features == takes]
        if len(hit) == 1:
            said += f". The input that reached `{hit[0]}` has {got} features, not {takes}"
    return (
        f"On that line {said}.",
        "a linear layer's input must end in its in_features: check which layer each input "
        "goes through, and in what order (each layer's output is the next one's input).",
    )


def _module_at(node, frame):
    """A module reached by attributes from a frame's name (``block.mlp.fc2``): submodules are
    read from ``_modules``, so no code of the learner runs."""
    if isinstance(node, ast.Name):
        return frame.f_locals.get(node.id, frame.f_globals.get(node.id))
    if isinstance(node, ast.Attribute):
        base = _module_at(node.value, frame)
        modules = getattr(base, "_modules", None)
        if isinstance(modules, dict) and node.attr in modules:
            return modules[node.attr]
    raise LookupError(ast.dump(node))


def _unpacked_value(frame, tree) -> tuple[str, str] | None:
    """An assignment ``a, b = value`` whose value holds another number of items."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple)):
            continue
        try:
            value = _evaluate(node.value, frame)
            count = len(value)
        except Exception:
            continue
        names = len(node.targets[0].elts)
        shown = repr(value) if len(repr(value)) < 60 else f"a {type(value).__name__} of {count}"
        return (
            f"On that line `{ast.unparse(node.value)}` is {shown}: {count} item"
            f"{'' if count == 1 else 's'}, unpacked into {names} names.",
            "check what that value holds for every item you loop over (not every event or row "
            "has the same shape): test its length first, or pick only the ones you mean.",
        )
    return None


def _uncalled_method(frame, tree) -> tuple[str, str] | None:
    """An argument that is a method itself (``model.parameters``) where its result is meant."""
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        for argument in call.args:
            if not (isinstance(argument, ast.Attribute) and isinstance(argument.value, ast.Name)):
                continue
            base = frame.f_locals.get(argument.value.id, frame.f_globals.get(argument.value.id))
            method = getattr(type(base), argument.attr, None)
            if base is None or not callable(method):
                continue
            text = ast.unparse(argument)
            return (
                f"On that line `{text}` is a method, passed without calling it.",
                f"call it to get what it returns: `{text}()`.",
            )
    return None


def _mask_index(values: dict, tree) -> tuple[str, str] | None:
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            continue
        if not isinstance(node.slice, ast.Name):
            continue
        base, mask = values.get(node.value.id), values.get(node.slice.id)
        if _tensor_words(base) is None or _tensor_words(mask) is None:
            continue
        if "bool" not in str(mask.dtype) or tuple(mask.shape) == tuple(base.shape):
            continue
        b, m = node.value.id, node.slice.id
        return (
            f"On that line `{b}` is {_tensor_words(base)} and the mask `{m}` is "
            f"{_tensor_words(mask)}.",
            f"a boolean mask picks elements of a tensor of its own shape: give both the same "
            f"shape, e.g. flatten both (`{b}.flatten()[{m}.flatten()]`) or neither.",
        )
    return None


def _calls_named(tree, name: str) -> list[ast.Call]:
    found = []
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == name:
                found.append(node)
    return found


#: Tensor methods that keep the shape: ``logits.float()`` has the shape of ``logits``.
_SAME_SHAPE = {"float", "half", "bfloat16", "double", "to", "contiguous", "detach", "clone"}


def _argument_values(call: ast.Call, frame) -> list[object]:
    out = []
    for argument in call.args:
        while (
            isinstance(argument, ast.Call)
            and isinstance(argument.func, ast.Attribute)
            and argument.func.attr in _SAME_SHAPE
        ):
            argument = argument.func.value
        try:
            out.append(_evaluate(argument, frame))
        except Exception:
            out.append(None)
    return out


def explain(error: BaseException, function) -> tuple[str, str] | None:
    """(what the values on the failing line show, hint) for an exception of the learner's
    function, or None when there is no frame of the learner's cell to read. The hint is '' when
    the values name no cause; the caller then keeps its generic one."""
    frame, line = learner_frame(error, function)
    if frame is None:
        return None
    try:
        text = str(error)
    except Exception:
        text = ""
    tree = _line_tree(frame, line)
    values = line_values(error, function)
    found = None
    try:
        found = _rule(error, text, frame, line, tree, values)
    except Exception:  # evidence is a complement: never let it break the verdict
        found = None
    if found is not None:
        return found
    seen = described(values)
    return (f"On that line {seen}.", "") if seen else None


def _rule(error, text, frame, line, tree, values) -> tuple[str, str] | None:
    if tree is None:
        return None
    if "'NoneType'" in text:
        found = _none_operand(frame, line, tree)
        if found is not None:
            return found
    match = re.search(r"'(\w+)' object is not callable", text)
    if isinstance(error, TypeError) and match:
        found = _not_callable(frame, line, tree, match.group(1))
        if found is not None:
            return found
    match = re.search(r"unsupported operand type\(s\) for [^:]+: '(\w+)' and '(\w+)'", text)
    if isinstance(error, TypeError) and match:
        found = _object_operand(frame, tree, match.groups())
        if found is not None:
            return found
    match = re.search(r"got an unexpected keyword argument '(\w+)'", text)
    if isinstance(error, TypeError) and match:
        found = _spread_keywords(frame, tree, match.group(1))
        if found is not None:
            return found
    match = re.search(r"'tuple' object has no attribute '(\w+)'", text)
    if isinstance(error, AttributeError) and match:
        found = _unpacked_tuple(frame, line, tree)
        if found is not None:
            return found
    if "not enough values to unpack" in text or "too many values to unpack" in text:
        found = _flattened_by_mask(values, tree) or _unpacked_value(frame, tree)
        if found is not None:
            return found
    if "generator=int" in text:
        return "", (
            "`generator=` takes a `torch.Generator`, and an int (a seed) was given: make one "
            "once, before the loop, `generator = torch.Generator().manual_seed(0)`, and pass it."
        )
    match = re.search(
        r"'(method|function|builtin_function_or_method)' object is not iterable", text
    )
    if isinstance(error, TypeError) and match:
        found = _uncalled_method(frame, tree)
        if found is not None:
            return found
    if "cannot be multiplied" in text:
        found = _linear_sizes(frame, tree, text)
        if found is not None:
            return found
    match = re.search(r"'(\w+)' object has no attribute '(\w+)'", text)
    if isinstance(error, AttributeError) and match:
        found = _no_attribute(frame, line, tree, match.group(1), match.group(2))
        if found is not None:
            return found
    match = re.search(r"'(\w+)' object is not subscriptable", text)
    if isinstance(error, TypeError) and match:
        found = _not_subscriptable(frame, line, tree, match.group(1))
        if found is not None:
            return found
    match = re.search(
        r"(\w+)\(\): argument '(\w+)' \(position \d+\) must be (\w+), not (\w+)", text
    )
    if isinstance(error, TypeError) and match:
        called, argument, wanted, got = match.groups()
        named = _calls_named(tree, called)
        called = ast.unparse(named[0].func) if named else called
        seen = f"`{called}(...)` was given a Python {got} as its `{argument}`, where it takes a {wanted}."
        if wanted == "Tensor" and got in ("list", "tuple"):
            return seen, (
                "torch functions take tensors: make one from a list of tensors with "
                "`torch.stack(...)` (or `torch.tensor(...)` from numbers), or add a list up with "
                "Python's own `sum(...)`."
            )
        return seen, ""
    if isinstance(error, IndexError) and ("mask" in text or "too many indices" in text):
        found = _mask_index(values, tree)
        if found is not None:
            return found
    if "must be a 3D tensor" in text:
        tensors = [v for v in values.values() if getattr(v, "ndim", 0) > 3]
        seen = f"On that line {described(values)}." if values else ""
        return seen, (
            "`torch.bmm` multiplies 3-d batches (batch, n, m) only"
            + (f", and these are {tensors[0].ndim}-d" if tensors else "")
            + ": use `@` (`torch.matmul`), which multiplies the last two axes and broadcasts "
            "over all the others."
        )
    if "device_type" in text and "str" in text:
        return "", (
            "`torch.autocast` takes the device's type as a string, e.g. "
            "`torch.autocast(device_type='cpu', dtype=torch.bfloat16)`, or `device.type` for "
            "a `torch.device`."
        )
    entropy = _calls_named(tree, "cross_entropy")
    if entropy and isinstance(error, RuntimeError) and "target" in text and "size" in text:
        arguments = _argument_values(entropy[0], frame)
        if getattr(arguments[0] if arguments else None, "ndim", 0) > 2:
            seen = f"On that line {described(values)}." if values else ""
            return seen, (
                "`F.cross_entropy` takes the classes on axis 1: (N, C) logits with (N,) "
                "targets, so flatten the positions into one axis first: "
                "`F.cross_entropy(logits.flatten(0, 1), targets.flatten())`."
            )
    if "target dtype" in text or "expected scalar type Long" in text:
        narrow = [
            (n, v)
            for n, v in values.items()
            if _tensor_words(v) is not None and str(v.dtype) in ("torch.int32", "torch.int16")
        ]
        if narrow:
            name = narrow[-1][0]  # the targets come after the inputs
            listed = "; ".join(f"`{n}` is {_tensor_words(v)}" for n, v in narrow)
            return (
                f"On that line {listed}.",
                "class indices (targets) must be int64 (`torch.long`), as token ids come from "
                f"the tokenizer: keep them int64, or convert with `{name}.long()`.",
            )
    if isinstance(error, NameError):
        match = re.search(r"name '(\w+)' is not defined", text)
        if match:
            known = [*frame.f_locals, *frame.f_globals]
            close = difflib.get_close_matches(match.group(1), known, n=1)
            if close:
                return "", f"did you mean `{close[0]}`? (defined in your cell or an earlier one)"
    return None


#: Tensor methods without an in-place twin whose result is the whole point of the call.
_OUT_OF_PLACE = {
    "view",
    "reshape",
    "softmax",
    "log_softmax",
    "contiguous",
    "float",
    "half",
    "bfloat16",
    "detach",
    "clone",
    "flatten",
    "permute",
    "expand",
    "repeat",
    "masked_select",
    "to",
    "triu",
    "tril",
}


def dropped_results(function) -> list[tuple[int, str, str]]:
    """(line, method, text) of each statement of the learner's cell that calls an out-of-place
    tensor method and throws its result away: ``scores.masked_fill(mask, -inf)`` on its own
    line (``masked_fill_`` changes the tensor; ``masked_fill`` returns a new one)."""
    import torch  # only the torch-based chapters call this

    filename = _filename(function)
    if filename is None:
        return []
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not isinstance(func, ast.Attribute) or func.attr.endswith("_"):
            continue
        method = func.attr
        if method in _IN_PLACE_NONE:  # a list's or set's own method (`seen.add(t)`), in place
            continue
        twin = hasattr(torch.Tensor, method) and hasattr(torch.Tensor, method + "_")
        if twin or method in _OUT_OF_PLACE:
            found.append((node.lineno, method, ast.unparse(node.value)))
    return found


def dropped_evidence(function) -> tuple[str, str] | None:
    """(what the source shows, hint) for the first dropped result, or None."""
    dropped = dropped_results(function)
    if not dropped:
        return None
    line, method, text = dropped[0]
    target = text.split(".", 1)[0] if "." in text else "x"
    twin = f" (`.{method}_(...)` is the in-place form)" if method not in _OUT_OF_PLACE else ""
    return (
        f"Line {line} computes `{text}` and throws the result away.",
        f"`.{method}(...)` returns a new tensor and leaves `{target}` as it was{twin}: keep "
        f"the result, `{target} = {text}`.",
    )
