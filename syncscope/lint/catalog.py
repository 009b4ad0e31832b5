"""Rule metadata without importing the rules (and so without libcst): what reports need on a
fully cached run. `tests/test_lint_rules.py` checks it against the rule classes."""

from __future__ import annotations

from typing import Mapping

# code -> (name, one-line summary, level)
CATALOG: dict[str, tuple[str, str, str]] = {
    'SYN101': ('device-bool-mask-index', 'Boolean-mask indexing (read) with a mask not known to be on the host', 'error'),
    'SYN102': ('host-bool-mask-write', 'Masked store into a device tensor through a host boolean mask', 'error'),
    'SYN103': ('device-bool-mask-tensor-write', 'Masked store of a tensor through a boolean mask not known to be on the host', 'error'),
    'SYN104': ('repeat-interleave-without-output-size', '`repeat_interleave` with tensor repeats and no `output_size`', 'error'),
    'SYN105': ('data-dependent-output-shape', 'An op whose output shape depends on device data (nonzero, unique, ...)', 'error'),
    'SYN106': ('one-hot-without-num-classes', '`one_hot` without `num_classes`', 'error'),
    'SYN201': ('item-on-device', '`.item()` on a tensor not known to be on the host', 'error'),
    'SYN202': ('tolist-on-device', '`.tolist()` on a tensor not known to be on the host', 'error'),
    'SYN203': ('blocking-copy-to-host', "A blocking device->host copy: `.cpu()`, `.to('cpu')`, `host.copy_(device)`", 'error'),
    'SYN204': ('numpy-on-device', '`.numpy(force=True)` (or `.numpy()`) on a device tensor', 'error'),
    'SYN205': ('scalar-conversion-of-tensor', '`int()` / `float()` / `bool()` of a tensor', 'error'),
    'SYN206': ('tensor-as-condition', 'A tensor used as a truth value (if/while/assert/and/or/not)', 'error'),
    'SYN301': ('syncing-property-read', 'Reading a property that copies from the device (e.g. `seq_lens_cpu`)', 'error'),
    'SYN302': ('configured-syncing-call', 'A call to a function configured as syncing (`syncing-functions`)', 'error'),
    'SYN401': ('tensor-from-host-data-on-device', '`torch.tensor(data, device=...)`: a blocking host->device copy', 'error'),
    'SYN402': ('new-tensor-from-host-data', '`t.new_tensor(data)` on a device tensor: a blocking host->device copy', 'error'),
    'SYN403': ('blocking-copy-to-device', 'A blocking host->device copy: `.to(device)`, `.cuda()`, `dev.copy_(host)`', 'error'),
    'SYN404': ('scalar-store-at-index', 'A Python number stored at an integer index of a device tensor', 'error'),
    'SYN405': ('host-data-slice-store', 'Host data stored into a slice of a device tensor', 'error'),
    'SYN406': ('scalar-store-through-index', 'A Python number stored into a device tensor through an index tensor or list', 'error'),
    'SYN407': ('host-index-gather', 'Indexing a device tensor with an index tensor or list that lives on the host', 'error'),
    'SYN408': ('device-scalar-as-number', 'A device tensor used as a slice bound, a size or a `range` bound', 'error'),
    'SYN501': ('device-synchronize', '`torch.cuda.synchronize()` and other whole-device synchronizations', 'error'),
    'SYN502': ('stream-synchronize', '`stream.synchronize()`', 'error'),
    'SYN503': ('event-synchronize', '`event.synchronize()`', 'error'),
    'SYN601': ('helper-syncs-on-argument', 'A call into a helper that syncs on the argument passed', 'error'),
    'SYN602': ('call-reaches-sync', 'A call or property read whose callee syncs, at any depth', 'error'),
}

# Diagnostics that are not rules: a file could not be linted, or a suppression is stale.
DIAGNOSTICS: dict[str, tuple[str, str, str]] = {
    "SYN001": ("unreadable-file", "The file could not be read or decoded", "error"),
    "SYN002": ("syntax-error", "The file could not be parsed", "error"),
    "SYN003": ("internal-error", "syncscope failed on this file (a bug: please report it)", "error"),
    "SYN900": ("unused-suppression", "A `# noqa` / `# syncscope: ignore` that suppresses nothing", "warning"),
}

# Which runtime kinds (syncscope.events.SyncKind) each rule predicts, for `syncscope lint --confirm`
# (lint/confirm.py). A rule not listed here (or mapped to None) accepts any kind: a syncing property or helper may sync in any way.
DEFAULT_RULE_KINDS: Mapping[str, frozenset[str] | None] = {
    "SYN101": frozenset({"bool_mask_index"}),
    "SYN102": frozenset({"host_index", "bool_mask_index", "h2d_copy"}),
    "SYN103": frozenset({"bool_mask_index", "host_index"}),
    "SYN104": frozenset({"repeat_interleave"}),
    "SYN105": frozenset({"nonzero", "dynamic_shape"}),
    "SYN106": frozenset({"dynamic_shape"}),
    "SYN201": frozenset({"item"}),
    "SYN202": frozenset({"tolist"}),
    "SYN203": frozenset({"cpu_copy", "unsynced_d2h_read"}),
    "SYN204": frozenset({"cpu_copy"}),
    "SYN205": frozenset({"item"}),
    "SYN206": frozenset({"item"}),
    "SYN301": None,
    "SYN302": None,
    "SYN401": frozenset({"h2d_copy", "h2d_pageable"}),
    "SYN402": frozenset({"h2d_copy", "h2d_pageable"}),
    "SYN403": frozenset({"h2d_copy", "h2d_pageable"}),
    "SYN404": frozenset({"scalar_store"}),
    "SYN405": frozenset({"h2d_copy", "h2d_pageable", "host_index"}),
    "SYN501": frozenset({"device_sync"}),
    "SYN502": frozenset({"stream_sync"}),
    "SYN503": frozenset({"event_sync"}),
    "SYN601": None,
    "SYN602": None,
}
# A sync torch reported from C++ without naming it could be any of them.
ANY_RULE_KINDS = frozenset({"other"})
