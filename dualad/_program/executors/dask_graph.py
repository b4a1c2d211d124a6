"""The Dask executor: a program over Dask arrays replayed as a graph of tasks, one per chunk.

Evaluating a program primitive by primitive on Dask arrays builds a graph of
several tasks per primitive and chunk, in Python, at every call: for a
Newton step on a data set in a few chunks, building the graphs costs more
than computing them. :func:`chunked` splits a program traced on Dask arrays
instead, once, into three NumPy programs (or more: rounds, below):

- *before* (one task): what depends only on replicated values (arrays of one
  chunk, NumPy arrays, numbers): ``lam * w``, say;
- *per chunk* (one task per chunk of the data): what is computed row by row
  from the partitioned arrays (those split along an axis, all into the same
  chunks) with those values, up to the sums over the partitioned axis,
  which it returns as partial sums: ``X[i] @ w``, the margins, the loss's
  terms, ``X[i].T @ r[i]``;
- *after* (one task): the partial sums added, then what depends on them:
  ``mean = sum / n``, the gradient's regularization term.

A value of each chunk computed from one made after the sums (``z - mean(z)``,
then its spread: a standardization, and its gradient) takes another round:
per chunk again, reading the task after the first round and the chunk's own
values of it, then after again; all rounds are one graph.

Each part is an ordinary program, cut from the optimized one and given its
executor as any program on NumPy arrays is (:func:`~dualad._staging.compile.compile` passes
its ``prepare``), so a per-chunk part of elementwise steps becomes one Numba
kernel where Numba is installed. A call then builds a graph of one task per
chunk and two more, whatever the number of primitives. Values that are
partitioned keep their chunks in the outputs; the others are arrays of one
chunk.

A program splits where the partition planner
(:mod:`dualad._program.passes.partition`) finds a per-chunk rule for every step
reading a partitioned value; where it does not, the reason is given instead, and
:func:`~dualad._staging.compile.compile` runs such a function eagerly, as Dask does.

The numbers are NumPy's on each chunk. A sum over the partitioned axis adds
the chunks' partial sums in chunk order, where Dask adds them in a tree:
the two agree to rounding (at most ``2 (n - 1) eps sum |x_i|`` apart).
"""

from __future__ import annotations

import operator
import uuid
from collections import OrderedDict
from typing import Any, Callable

import array_api_compat
import numpy as np

from dualad._base.backend import NUMPY_XP, persist
from dualad._program.executors.replay import replay
from dualad._program.ir import Eqn
from dualad._program.passes.partition import SHAPE_PARAMS, NotPartitioned, Partition, partition
from dualad._program.program import Program

__all__ = ["DaskProgram", "dask_program"]


def dask_program(program: Program, inputs: list,
                 prepare: Callable[[Program], Program]) -> "DaskProgram | str":
    """``program`` (traced on Dask arrays ``inputs`` and constants, optimized) split into a
    task before, one per chunk and one after (see the module's docstring), each part made
    ready to replay by ``prepare``; or why it does not split, as a sentence.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import dualad
    >>> X = da.ones((6, 2), chunks=(3, 2))
    >>> f = dualad.compile(lambda w: np.sum(X @ w) / 6.0)
    >>> float(f(da.ones(2))), float(f(da.full(2, 2.0))), f.stats["executor"]
    (2.0, 4.0, 'dask')
    >>> print(f.program(da.ones(2)))  # doctest: +ELLIPSIS
    # before (one task)
    def program(x0):
        return x0
    # per chunk of 3 rows (2 tasks)
    def program(x0, x1):
        t... = np.matmul(x1, x0)
        t... = np.sum(t..., axis=(-1,), keepdims=False)
        return t...
    # after (one task, the chunks' partial results combined first)
    def program(x0):
        t... = np.divide(x0, 6.0)
        return t...
    """
    try:
        return DaskProgram(program, partition(program, inputs), prepare)
    except NotPartitioned as why:
        return str(why)


class DaskProgram:
    """A program of Dask arrays replayed as a task before, one per chunk and one after
    (see the module's docstring): ``replay`` builds that graph, ``str()`` shows the parts.

    Answers what :class:`~dualad._staging.compile.Compiled` asks of a program
    (``rebuild``, ``guards``, ``outcomes``) and of its executor (``runner``); the
    program as traced is ``traced``.
    """

    def __init__(self, program: Program, split: Partition, prepare: Callable[[Program], Program]):
        self.traced, self.rebuild = program, program.rebuild
        self.guards, self.outcomes = [], ()
        self.rows = split.rows or ()
        self._before_inputs = [s for s in range(program.n_inputs) if s not in split.axis]
        _check_outputs(program, split)
        axis, partial, late = split.axis, split.partial, split.late
        n_rounds = split.n_rounds
        rounds = range(1, n_rounds + 1)
        before, per_chunk, after = split.parts()
        outputs = set(program.outputs)
        chunk_outputs = [s for s in program.outputs if s in axis]
        self._partials = {r: sorted(s for s in partial if split.round[s] == r) for r in rounds}
        self._post_outputs = [s for s in program.outputs if s not in axis]
        self._reads, self._returns = _wiring(split, per_chunk, after, self._partials, chunk_outputs,
                                             self._post_outputs)
        returns = self._returns
        self._combine = {r: [getattr(np, partial[s]) for s in self._partials[r]] for r in rounds}
        self._blocks = sorted({s for reads in self._reads.values() for s in reads if split.is_block(s)})
        self._dask_inputs = [s for s in range(program.n_inputs)
                             if array_api_compat.is_dask_array(split.inputs[s])]
        all_after = [s for r in rounds for s in after[r]]
        reads_after = {s for r in rounds for s in self._reads["after", r]} | outputs
        host, arrays = _on_host(program, split, before + all_after, reads_after)
        self._block_sources = _cut_constants(program, split, host)
        token = uuid.uuid4().hex
        self.before = _Part(_subprogram(program, self._before_inputs, before, returns["before"], host,
                                        arrays), prepare, f"{token}-before")
        self.after = {r: _Part(_subprogram(program, self._reads["after", r], after[r], returns["after", r],
                                           host, arrays), prepare, f"{token}-after-{r}") for r in rounds}
        self.per_chunk = {(r, n): _Part(_subprogram(program, self._reads["chunk", r], per_chunk[r],
                                                    returns["chunk", r], host, arrays, split, n),
                                        prepare, f"{token}-chunk-{r}-{n}")
                          for r in rounds for n in sorted(set(self.rows))}
        self._axis = {s: axis[s] for s in program.outputs if s in axis}
        self._axis.update({s: split.axis.get(s, split.cut.get(s)) for s in self._blocks})
        self._round_of_output = {s: (1 if split.is_source(s) else split.round[s]) for s in chunk_outputs}
        self._round, self._combined = split.round, set(partial) | set(late)
        self.n_rounds = n_rounds

    def __str__(self) -> str:
        parts = [("before (one task)", self.before)]
        for r in range(1, self.n_rounds + 1):
            pass_ = f"round {r}: " if self.n_rounds > 1 else ""
            parts += [(f"{pass_}per chunk of {n} rows ({self.rows.count(n)} tasks)", self.per_chunk[r, n])
                      for n in sorted(set(self.rows))]
            parts.append((f"{pass_}after (one task, the chunks' partial results combined first)",
                          self.after[r]))
        return "\n".join(f"# {title}\n{part.program}" for title, part in parts)

    def runner(self) -> Callable:
        """The replay as a function of the inputs, ``run(*inputs)``."""
        return lambda *inputs: self.replay(list(inputs))

    def replay(self, inputs: list) -> list:
        """The outputs as Dask arrays of a graph of a task before, then per round one task
        per chunk and one after."""
        from dask.highlevelgraph import HighLevelGraph

        token = uuid.uuid4().hex
        core = f"dualad-program-{token}"
        arrays = {s: inputs[s] for s in self._dask_inputs}
        arrays.update(self._block_sources)
        before = (f"{core}-before",)
        layer: dict = {before: (self.before, *[_key(inputs[s], None, 0) if s in arrays else inputs[s]
                                               for s in self._before_inputs])}
        tasks = {"before": before}  # part -> key (a chunk's: per chunk)
        chunks: dict[int, list] = {}
        for r in range(1, self.n_rounds + 1):
            chunks[r] = []
            for i, n in enumerate(self.rows):
                key = (f"{core}-chunk-{r}", i)
                picks, sources = self._sources(("chunk", r), tasks, i, arrays)
                layer[key] = (_run_chunk, self.per_chunk[r, n], picks, sources)
                chunks[r].append(key)
            tasks["chunk", r] = chunks[r]
            after = (f"{core}-after-{r}",)
            picks, sources = self._sources(("after", r), tasks, None, arrays)
            layer[after] = (_run_after, self.after[r], self._combine[r], chunks[r], picks, sources)
            tasks["after", r] = after
        graph = HighLevelGraph.from_collections(core, layer, dependencies=list(arrays.values()))
        layers, dependencies = dict(graph.layers), dict(graph.dependencies)
        outputs = []
        for j, slot in enumerate(self.traced.outputs):
            name = f"dualad-output-{j}-{token}"
            _, shape, dtype = self.traced.avals[slot]
            a = self._axis.get(slot)
            if a is None:
                layers[name] = {(name, *[0] * len(shape)): (operator.getitem, tasks["after", self.n_rounds],
                                                            self._post_outputs.index(slot))}
                chunks_of = tuple((d,) for d in shape)
            else:
                r = self._round_of_output[slot]
                at = self._returns["chunk", r].index(slot)
                layers[name] = {(name, *[i if k == a else 0 for k in range(len(shape))]):
                                (operator.getitem, key, at) for i, key in enumerate(chunks[r])}
                chunks_of = tuple(self.rows if k == a else (d,) for k, d in enumerate(shape))
            dependencies[name] = {core}
            outputs.append((name, chunks_of, dtype))
        import dask.array as da

        graph = HighLevelGraph(layers, dependencies)
        return [da.Array(graph, name, chunks_of, dtype=dtype, meta=np.empty((0,) * len(chunks_of), dtype))
                for name, chunks_of, dtype in outputs]

    def _sources(self, part: tuple, tasks: dict, i: int | None, arrays: dict) -> tuple["_Picks", list]:
        """``(picks, sources)`` of a task of ``part`` (of chunk ``i``): the keys it reads, and
        for each input of the part the source it comes from and its place in that source's
        results (None: the source is the input, a block of the data). A value of each chunk
        comes from that chunk's task of its round; a partial result combined, or a value
        made from one, from the task after its round; any other from the task before."""
        sources, picks = [], []
        skip = len(self._partials[part[1]]) if part[0] == "after" else 0
        for s in self._reads[part][skip:]:
            if s in self._blocks:
                picks.append((len(sources), None))
                sources.append(_key(arrays[s], self._axis[s], i))
                continue
            if s in self._returns["before"]:
                name = "before"
            else:
                name = ("after" if s in self._combined else "chunk", self._round[s])
            task = tasks[name][i] if name[0] == "chunk" else tasks[name]
            if task not in sources:
                sources.append(task)
            picks.append((sources.index(task), self._returns[name].index(s)))
        return _Picks(picks), sources


def _check_outputs(program: Program, split: Partition) -> None:
    """Every output that is an input or a constant, and not partitioned, is a Dask array."""
    for slot in program.outputs:
        if slot >= program.n_inputs and slot not in program.consts or slot in split.axis:
            continue
        value = split.inputs[slot] if slot < program.n_inputs else program.consts[slot]
        if not array_api_compat.is_dask_array(value):
            raise NotPartitioned("it returns a value that is not a Dask array")


def _wiring(split: Partition, per_chunk: dict, after: dict, partials_of: dict, chunk_outputs: list,
            post_outputs: list) -> tuple[dict, dict]:
    """``(reads, returns)``: the slots each part reads (its inputs) and returns (its
    outputs), by part (``("chunk", r)``, ``("after", r)``, ``"before"``). A part's input
    comes from the task of the part that returns it, a block from the data; a round's
    partial results come first in what its chunks return and its task after reads."""
    source, block, from_before, made = split.is_source, split.is_block, split.from_before, split.is_made
    n_rounds, partial = split.n_rounds, split.partial
    rounds = range(1, n_rounds + 1)
    reads_of: dict[tuple, list] = {}
    returns: dict = {}
    for r in rounds:
        reads = {s for step in per_chunk[r] for s in step.ins} - set(split.rebroadcast)
        if r == 1:
            reads |= {s for s in chunk_outputs if source(s)}
        reads_of["chunk", r] = sorted(s for s in reads if block(s) or from_before(s)
                                      or (made(s) and split.round.get(s, 0) < r))
        reads = {s for step in after[r] for s in step.ins} | (set(post_outputs) if r == n_rounds else set())
        partials = partials_of[r]
        reads_of["after", r] = partials + sorted(
            s for s in reads if s not in partials and not (made(s) and split.round.get(s) == r)
            and (from_before(s) or made(s)))
    for r in rounds:
        made_here = {s for step in per_chunk[r] for s in step.outs} - set(split.rebroadcast)
        wanted = {s for (kind, k), reads in reads_of.items() for s in reads
                  if kind == "chunk" and k > r and s in made_here}
        wanted |= {s for s in chunk_outputs if s in made_here or (r == 1 and source(s))}
        returns["chunk", r] = partials_of[r] + sorted(wanted - set(partial))
        if r < n_rounds:
            mine = set(reads_of["after", r]) | {s for step in after[r] for s in step.outs}
            returns["after", r] = sorted(s for s in mine if any(
                s in reads for (kind, k), reads in reads_of.items() if k > r)
                and made(s) and split.later(s))
    returns["after", n_rounds] = post_outputs
    returns["before"] = sorted({s for reads in reads_of.values() for s in reads if from_before(s)})
    return reads_of, returns


class _Picks:
    """Where a part's inputs are in the results of the tasks it reads: ``(task, place)``
    pairs, place None for a block of the data (held apart: Dask reads tuples in a task's
    arguments as keys)."""

    def __init__(self, pairs: list):
        self.pairs = pairs

    def __call__(self, sources: list) -> list:
        return [sources[k] if j is None else sources[k][j] for k, j in self.pairs]


def _run_chunk(part: "_Part", picks: _Picks, sources: list) -> list:
    """One chunk's task: its part on its blocks and the values of the parts before it."""
    return part(*picks(sources))


def _run_after(part: "_Part", combine: list, chunks: list, picks: _Picks, sources: list) -> list:
    """A round's last task: the chunks' partial results combined (``combine``: a ufunc each,
    the first results of each chunk's task, in chunk order: sums added), then the part
    after, on them and the values of the parts before it."""
    combined = [ufunc.reduce([c[j] for c in chunks]) for j, ufunc in enumerate(combine)]
    return part(*combined, *picks(sources))


def _key(array: Any, axis: int | None, i: int) -> tuple:
    """The key of block ``i`` along ``axis`` of a Dask array (of its only block: None)."""
    return (array.name, *[i if k == axis else 0 for k in range(array.ndim)])


def _on_host(program: Program, split: Partition, steps: list, reads_after: set) -> tuple[dict, dict]:
    """``(constants, arrays)``: the program's constants with its Dask arrays of one chunk
    computed (and what the parts before and after read of a partitioned one, though that
    is rare: a sum of the data itself), and ``id -> NumPy array`` of the Dask arrays among
    the steps' parameters (an index array a rule made), all in one computation, once."""
    consts = dict(program.consts)
    read = {s for step in steps for s in step.ins} | reads_after
    wanted = [s for s, v in consts.items() if array_api_compat.is_dask_array(v)
              and (s in read or s not in split.axis or s in split.cut)]
    in_params = {id(a): a for step in program.steps if type(step) is Eqn
                 for a in _arrays_in(tuple(step.params.values()))}
    if not wanted and not in_params:
        return consts, {}
    import dask

    lazy = [consts[s] for s in wanted] + list(in_params.values())
    try:  # here, not on a cluster: their keys are the trace's, which it may hold fused otherwise
        values = dask.compute(*lazy, scheduler="sync")
    except Exception:  # noqa: BLE001  (a graph of a cluster's data: computed there, unoptimized)
        values = dask.compute(*lazy, optimize_graph=False)
    consts.update(zip(wanted, values))
    return consts, dict(zip(in_params, values[len(wanted):]))


def _arrays_in(value: Any) -> list:
    """The Dask arrays in a parameter (in tuples and lists too)."""
    if array_api_compat.is_dask_array(value):
        return [value]
    if type(value) in (tuple, list):
        return [a for v in value for a in _arrays_in(v)]
    return []


def _with_host_arrays(value: Any, arrays: dict) -> Any:
    """A parameter with the Dask arrays in it replaced by their NumPy values (``arrays``)."""
    if array_api_compat.is_dask_array(value):
        return arrays[id(value)]
    if type(value) in (tuple, list):
        return type(value)(_with_host_arrays(v, arrays) for v in value)
    return value


def _cut_constants(program: Program, split: Partition, host: dict) -> dict:
    """Slot -> Dask array of each partitioned constant: the data chunked in the rows
    themselves; what the trace computed from them, and the constants of one chunk spanning
    the partitioned axis cut into the rows' chunks from their numbers (``host``:
    :func:`_on_host`), computed and kept once."""
    import dask.array as da

    blocks = {s: program.consts[s] for s in split.axis if s in program.consts and s not in split.cut}
    # what the trace computed from the data (X.T, y * c) under keys of its own, kept: a call's
    # graph then holds a task per chunk of it, not the tasks that made it (this costs the
    # memory of those arrays: a transposed copy of X)
    kept = {s: own for s, v in blocks.items() if (own := _own_keys(v)) is not v}
    for s, a in split.cut.items():
        shape = np.shape(host[s])
        chunks = tuple(split.rows if k == a else (d,) for k, d in enumerate(shape))
        # from its numbers, under a name of their own: the trace's graphs hold its old keys,
        # which a distributed scheduler may hold fused otherwise ("Detected different run_spec")
        kept[s] = da.from_array(np.asarray(host[s]), chunks=chunks)
    if kept:
        blocks.update(zip(kept, persist(*kept.values())))
    return blocks


def _own_keys(array: Any) -> Any:
    """``array`` (a constant the trace computed from the data: ``X.T``, ``y * c``) by a copy
    of its graph whose tasks have keys of their own, its data (what has no task) shared.

    Dask names a task by what it computes, so the trace's own graphs and each program's
    constants hold the same keys, and a distributed scheduler that receives one key as two
    different tasks (an alias into a fused chain, and the chain's first task) warns
    "Detected different run_spec" and may deadlock (dask/dask#9888); keys of its own keep
    a program's graphs apart. (``dask.graph_manipulation.clone`` does this, but fails on
    these graphs in dask 2026.8: "Cannot fuse tasks with multiple outputs".)"""
    from dask._task_spec import DataNode, convert_legacy_graph
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph

    graph = convert_legacy_graph(dict(array.__dask_graph__()))
    prefix = f"dualad-{uuid.uuid4().hex[:12]}-"
    renamed = {k: (prefix + k[0], *k[1:]) if type(k) is tuple else prefix + k
               for k, node in graph.items() if not isinstance(node, DataNode)}
    if not all(k in renamed for k in flatten(array.__dask_keys__())):  # data itself: kept as it is
        return array
    layer = {renamed.get(k, k): node.substitute(renamed, key=renamed[k]) if k in renamed else node
             for k, node in graph.items()}
    name = prefix + array.name
    return type(array)(HighLevelGraph.from_collections(name, layer, dependencies=[]), name, array.chunks,
                       dtype=array.dtype, meta=array._meta)


def _subprogram(program: Program, inputs: list, steps: list, outputs: list, consts: dict, arrays: dict,
                split: Partition | None = None, rows: int | None = None) -> Program:
    """The NumPy program of ``steps`` of ``program`` with those ``inputs`` and ``outputs``
    (``consts`` and the parameters' ``arrays`` computed: :func:`_on_host`); with ``split``,
    the program of a chunk of ``rows`` rows (its shapes and the shape parameters of its
    steps along the partitioned axis)."""
    number = {s: k for k, s in enumerate(inputs)}

    def new(s: int) -> int:
        return number[s] if s in number else len(inputs) + s

    def shape(s: int, old: tuple) -> tuple:
        a = None if split is None else split.axis.get(s, split.cut.get(s, split.rebroadcast.get(s)))
        return old if a is None or old is None else tuple(rows if k == a else d for k, d in enumerate(old))

    eqns = []
    for step in steps:
        params = {k: _with_host_arrays(v, arrays) for k, v in step.params.items()} if arrays else step.params
        key = SHAPE_PARAMS.get(step.prim.partition)
        if split is not None and key is not None and (step.outs[0] in split.axis
                                                      or step.outs[0] in split.rebroadcast):
            params = {**params, key: shape(step.outs[0], tuple(params[key]))}
        eqns.append(Eqn(step.prim, params, tuple(map(new, step.ins)), tuple(map(new, step.outs)),
                        None if step.xp is None else NUMPY_XP))
    read = {s for step in steps for s in step.ins} | set(outputs)
    made = {s for step in steps for s in step.outs}
    kept = {new(s): v for s, v in consts.items() if s in read and s not in number}
    avals = {new(s): (np.ndarray if _is_array(t) else t, shape(s, sh), dt)
             for s, (t, sh, dt) in program.avals.items() if s in number or s in read or s in made}
    return Program(len(inputs), kept, eqns, [new(s) for s in outputs], None, avals)


def _is_array(kind: Any) -> bool:
    return getattr(kind, "__module__", "").split(".")[0] == "dask"


class _Part:
    """One part of a chunked program: its NumPy program, made ready by ``prepare`` at its
    first call in each process. It pickles as its definition, under a name that a process
    which already holds it (a worker that ran it, or this one) resolves to that."""

    def __init__(self, program: Program, prepare: Callable[[Program], Program], token: str):
        self.program, self.prepare, self.token = program, prepare, token
        self._ready: Program | None = None
        _PARTS[token] = self
        while len(_PARTS) > _KEEP:
            _PARTS.popitem(last=False)

    def __call__(self, *args: Any) -> list:
        ready = self._ready
        if ready is None:
            ready = self._ready = self.prepare(self.program)
        return replay(ready, list(args))

    def __reduce__(self) -> tuple:
        p = self.program
        steps = [(s.prim, s.params, s.ins, s.outs, s.xp is None) for s in p.steps]
        return _part, (self.token, (p.n_inputs, p.consts, steps, p.outputs, p.avals), self.prepare)


def _part(token: str, definition: tuple, prepare: Callable) -> _Part:
    """The part named ``token``: this process's, or one made from its definition."""
    part = _PARTS.get(token)
    if part is None:
        n_inputs, consts, steps, outputs, avals = definition
        eqns = [Eqn(prim, params, ins, outs, None if plain else NUMPY_XP)
                for prim, params, ins, outs, plain in steps]
        part = _Part(Program(n_inputs, consts, eqns, outputs, None, avals), prepare, token)
    return part


_KEEP = 256  # parts a process keeps (each program has three, or four with a short last chunk)
_PARTS: "OrderedDict[str, _Part]" = OrderedDict()
