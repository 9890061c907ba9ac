"""The LongMemEval diagnosis table: where ours ranks the first evidence turn, and what ranks above it.

Usage (from the repository root)::

    HF_HUB_OFFLINE=1 python benchmarks/lme_replay.py CAPTURE.pkl ["cchars=-1"]

``CAPTURE.pkl`` is a ``--lme-replay-cache`` written by ``retrieval.py --gate-replay ... --longmemeval``;
the optional second argument is a ``--ours`` override string (no argument: today's defaults).  The
work is ``_lme_replay.above_evidence``; this script only parses the arguments and prints, so no module
has to import an entry script (until issue 25 this was ``python -m benchmarks._lme_replay``).
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adk_oceanbase.memory import MemorySettings  # noqa: E402
from benchmarks._dataset import parse_overrides  # noqa: E402
from benchmarks._lme_replay import above_evidence  # noqa: E402
from benchmarks._ours import settings_from_overrides  # noqa: E402


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    captured = pickle.loads(Path(argv[0]).read_bytes())
    base = dataclasses.replace(MemorySettings(), scoring="numpy")
    settings = settings_from_overrides(base, parse_overrides(argv[1] if len(argv) > 1 else ""))
    for group, m in above_evidence(captured, settings).items():
        print(f"{group:27s} " + "  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in m.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
