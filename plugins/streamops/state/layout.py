"""An operator's name for :mod:`streamops_contract.state.layout` (the contract the job
side shares): the very module, not a copy, so every name and monkeypatch reaches the same object."""

import sys

from streamops_contract.state import layout

sys.modules[__name__] = layout
