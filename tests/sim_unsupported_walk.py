"""Run by tests/test_sim_unsupported.py in a subprocess: under the simulated device, run the example
of every entry of syncscope/runtime/sim/unsupported.py's list and log what it raised, with START /
END lines so the parent can tell a clean run from a process abort (and which entry aborted).

    python tests/sim_unsupported_walk.py LOG
"""

from __future__ import annotations

import sys
import warnings

import torch

import syncscope
from syncscope.runtime.sim.unsupported import UNSIMULATED


def main(log_path: str) -> None:
    warnings.simplefilter("ignore")
    with open(log_path, "w") as log, syncscope.trap(device="sim"):
        x = torch.ones(4, device="cuda")
        for index, entry in enumerate(UNSIMULATED):
            log.write(f"START\t{index}\n")
            log.flush()
            try:
                exec(entry.example, {"torch": torch, "x": x})
                outcome = "ok\t"
            except BaseException as exc:  # noqa: BLE001 - every outcome is data here
                text = " ".join(str(exc).split())
                outcome = f"{type(exc).__name__}\t{text[:1000]}"
            log.write(f"END\t{index}\t{outcome}\n")
            log.flush()
    print("walk done")


if __name__ == "__main__":
    main(sys.argv[1])
