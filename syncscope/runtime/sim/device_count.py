"""How many GPUs the simulated device has (devices.py uses it). Torch-free, so `syncscope run` can
refuse a bad value before anything starts."""

from __future__ import annotations

import os

DEVICES_ENV = "SYNCSCOPE_SIM_DEVICES"


def simulated_device_count() -> int:
    """How many GPUs the simulated device has: `SYNCSCOPE_SIM_DEVICES` (default 2; devices.py).
    A bad value: ValueError, which `syncscope run` turns into one error line and exit 2."""
    text = os.environ.get(DEVICES_ENV, "2").strip()
    try:
        count = int(text)
    except ValueError:
        count = 0
    if not 1 <= count <= 64:
        raise ValueError(f"{DEVICES_ENV}={text!r}: expected a number of simulated GPUs from 1 to 64")
    return count
