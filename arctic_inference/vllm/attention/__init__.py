"""Forest Cascade Attention: shared-prefix attention for many prefix groups at once.

Modules, one job each:

* :mod:`.forest_config`  the ``--forest-cascade-attn-configs`` knob and its validation
* :mod:`.kv_layout`      the one place that knows how the backend lays out its KV cache
* :mod:`.grouping`       pure: block tables in, prefix groups out (plus eligibility)
* :mod:`.plan`           groups turned into the index tensors the two kernel calls need
* :mod:`.static_plan`    a plan of static shapes in persistent buffers (full CUDA graphs)
* :mod:`.planner`        builder-side: eligibility, grouping and plan per step
* :mod:`.host_tables`    the runner's host block tables, found from the device tensor
* :mod:`.hooks`          the two calls the fork makes (plan in the builder, run in the impl)
* :mod:`.forward`        grouped prefix call + causal suffix call + LSE merge
* :mod:`.reference`      a PyTorch stand-in for ``flash_attn_varlen_func`` (CPU tests)
* :mod:`.flash_attn_fork` the declared fork of vLLM's FlashAttention backend
* :mod:`.install`        the patch that puts the fork in place of ``FLASH_ATTN`` (forest configs only)

Nothing here imports vLLM at package import time.
"""
