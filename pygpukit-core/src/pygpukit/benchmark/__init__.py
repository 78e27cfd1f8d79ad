"""`python -m pygpukit.benchmark`: pygpukit's ops timed beside their peers, as ratios.

On a GPU the peers are PyTorch and CuPy (each where installed), on the CPU NumPy. Every
pygpukit result is checked against a float64 reference before it is timed; a wrong result
is a FAIL row and is not timed, and an op no provider serves on the device is a
"missing" row. See ``python -m pygpukit.benchmark --help``; `cli` holds the command,
`cases` what is measured, `runner` and `special` how, `timing` the clocks, `report` the
tables and the comparison with a saved run.
"""

from .cli import main, run_benchmark
from .results import PeerResult, Row, Run
from .timing import Stats, measure

__all__ = ["PeerResult", "Row", "Run", "Stats", "main", "measure", "run_benchmark"]
