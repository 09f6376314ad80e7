"""``ArcticPatch.revert`` on a real vLLM class: what test fixtures rely on."""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

from vllm.engine.arg_utils import EngineArgs  # noqa: E402

from arctic_inference.patching import is_applied, reverting_new_patches  # noqa: E402
from arctic_inference.vllm.args_patch import EngineArgsPatch  # noqa: E402


def test_revert_hands_back_the_stock_engine_args() -> None:
    assert not is_applied(EngineArgsPatch), "an earlier test module leaked the patch"
    names = list(EngineArgsPatch.patch_attributes())
    stock = {n: EngineArgs.__dict__.get(n) for n in names}
    assert stock["__getattr__"] is None  # the patch adds it
    with reverting_new_patches():
        EngineArgsPatch.apply()
        assert EngineArgs.__dict__["create_engine_config"] is not stock["create_engine_config"]
        assert EngineArgs(model="m").__getattr__ is not None
    assert not is_applied(EngineArgsPatch)
    assert {n: EngineArgs.__dict__.get(n) for n in names} == stock
    assert isinstance(EngineArgs.__dict__["add_cli_args"], staticmethod)
    assert isinstance(EngineArgs.__dict__["from_cli_args"], classmethod)
    assert inspect.getattr_static(EngineArgs, "__getattr__", None) is None
    with pytest.raises(AttributeError):
        EngineArgs(model="m").fp32_lm_head  # noqa: B018  backfill gone
