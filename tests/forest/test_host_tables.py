"""The planner finds the runner's host copy of a real BlockTable from its device tensor."""

from __future__ import annotations

import torch


def _block_table():
    from vllm.v1.worker.block_table import BlockTable

    return BlockTable(
        block_size=16,
        max_num_reqs=8,
        max_num_blocks_per_req=6,
        max_num_batched_tokens=64,
        pin_memory=False,
        device=torch.device("cpu"),
        kernel_block_size=16,
        cp_kv_cache_interleave_size=1,
    )


def test_a_registered_table_is_read_from_its_host_copy(reverted_patches):
    from arctic_inference.vllm.attention.host_tables import BlockTableHostPatch, host_block_table

    BlockTableHostPatch.apply()
    table = _block_table()
    table.add_row([4, 5, 6], 0)
    table.add_row([4, 5, 7], 1)
    table.commit_block_table(2)
    device = table.get_device_tensor(2)
    host = host_block_table(device)
    assert host is not None and host.data_ptr() == table.get_cpu_tensor().data_ptr()
    assert host[:, :3].tolist() == [[4, 5, 6], [4, 5, 7]]
    # Not the start of a known table (a copy, or a column slice): not found.
    assert host_block_table(device.clone()) is None
    assert host_block_table(device[:, 1:]) is None


def test_tables_built_before_the_patch_are_not_known(reverted_patches):
    from arctic_inference.vllm.attention.host_tables import host_block_table

    table = _block_table()
    assert host_block_table(table.get_device_tensor(2)) is None
