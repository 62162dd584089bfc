"""Reads the metrics file that `zerotrain --metrics PATH` writes: JSON lines, one object a line, each
with an "event" that names its kind:

  start          once, before the first step: world size, stage, params, the memory plan, allocations
  step           one per optimizer step: step, samples, loss, lr, grad_norm, loss_scale, skipped,
                 step_ms, tokens_per_s, comm_bytes, comm_calls, mem_peak
  flops_profile  with the flops profiler on: the profiled step's FLOPs, times and MFU
  end            once, after the last step: steps, param_checksum, param_l2, val_loss, resident memory
  stopped        when a signal stopped the run: the step, the signal, whether a checkpoint was saved

`read_metrics(path)` returns a `Metrics`: `.start`, `.steps` (step number -> record, in file order),
`.end`, `.events` (every record in order) and `.of(kind)` (the records of one kind, in order).
Standard library only, so that the system python3 and the test virtualenv can both import it.
"""
import json
import os

__all__ = ["Metrics", "read_metrics"]


class Metrics:
    """The records of one metrics file. A file that does not exist reads as no records."""

    def __init__(self, path, events=()):
        self.path = path
        self.events = list(events)
        # The binary writes one start and one end record per run (it truncates the file at start-up);
        # should a file hold more, the last one counts, as it would for a reader that overwrites.
        self.start = None
        self.end = None
        # Keyed by step number in the order the file has them; a repeated number keeps the later record.
        self.steps = {}
        for r in self.events:
            kind = r["event"]
            if kind == "start":
                self.start = r
            elif kind == "end":
                self.end = r
            elif kind == "step":
                self.steps[r["step"]] = r

    def of(self, kind):
        """The records whose "event" is `kind`, in file order (every one, repeats included)."""
        return [r for r in self.events if r["event"] == kind]

    def __repr__(self):
        return "Metrics(%r: %d records, %d steps, start %s, end %s)" % (
            self.path, len(self.events), len(self.steps), self.start is not None, self.end is not None)


def read_metrics(path, missing_ok=True, truncated_tail_ok=False):
    """Reads the metrics file at `path`.

    missing_ok: a file that does not exist gives an empty Metrics (a run refused before it trained
    leaves none); False lets the open's FileNotFoundError through.
    truncated_tail_ok: a last line with no newline that does not parse is dropped. The binary writes
    each record whole with its newline, so only a run killed mid-write (by `timeout`, say) leaves such
    a line; any other malformed line is still an error.

    Raises ValueError naming the path and the line number for a line that is not a JSON object with
    an "event".
    """
    if missing_ok and not os.path.exists(path):
        return Metrics(path)
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    # A file that ends in a newline splits into a last empty piece: no line there. Otherwise the last
    # piece is a line the writer did not finish (or an empty file's only, empty, piece).
    unfinished = lines.pop()
    events = []
    for number, raw in enumerate(lines, 1):
        events.append(_record(path, number, raw))
    if unfinished:
        try:
            events.append(_record(path, len(lines) + 1, unfinished))
        except ValueError:
            if not truncated_tail_ok:
                raise
    return Metrics(path, events)


def _record(path, number, raw):
    where = "%s:%d" % (path, number)
    try:
        r = json.loads(raw.decode("utf-8"))
    except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError are both ValueErrors
        raise ValueError("%s: not a JSON line of the metrics file: %s" % (where, e)) from None
    if not isinstance(r, dict) or not isinstance(r.get("event"), str):
        raise ValueError("%s: a metrics record is a JSON object with an \"event\"; this line is %.80s"
                         % (where, raw.decode("utf-8", "replace")))
    if r["event"] == "step" and "step" not in r:
        raise ValueError("%s: a step record without its \"step\" number" % where)
    return r
