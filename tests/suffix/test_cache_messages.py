"""What the cache tells a caller who passes bad arguments, and which policy it picks."""

from __future__ import annotations

import pytest

from arctic_inference.suffix_decoding import SuffixDecodingCache
from arctic_inference.suffix_decoding.policy import CostAwarePolicy


@pytest.mark.parametrize(
    ("req_id", "type_name"), [(1.5, "float"), (True, "bool"), (None, "NoneType"), (["x"], "list")]
)
def test_bad_request_id_names_its_type(req_id, type_name: str) -> None:
    cache = SuffixDecodingCache(policy=False)
    with pytest.raises(ValueError) as err:
        cache.start_request(req_id, [1])
    assert str(err.value) == f"request id must be a str or int, got {type_name}"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tree_depth": 0}, "max_tree_depth must be an int >= 1, got 0"),
        ({"max_tree_depth": True}, "max_tree_depth must be an int >= 1, got True"),
        ({"max_cached_requests": "4"}, "max_cached_requests must be an int, got '4'"),
    ],
)
def test_bad_constructor_arguments_are_named(kwargs, message: str) -> None:
    with pytest.raises(ValueError) as err:
        SuffixDecodingCache(**kwargs)
    assert str(err.value) == message


def test_closed_cache_refuses_new_requests() -> None:
    cache = SuffixDecodingCache(policy=False)
    cache.close()
    with pytest.raises(RuntimeError) as err:
        cache.start_request("r", [1])
    assert str(err.value) == "SuffixDecodingCache was closed"


def test_default_cache_takes_the_policy_the_environment_names(monkeypatch) -> None:
    # vLLM builds the cache with defaults, so the environment is the only way to pick one.
    monkeypatch.setenv("ARCTIC_INFERENCE_SUFFIX_POLICY", "cost")
    assert isinstance(SuffixDecodingCache().policy, CostAwarePolicy)
    assert SuffixDecodingCache(policy=False).policy is None
    monkeypatch.setenv("ARCTIC_INFERENCE_SUFFIX_POLICY", "off")
    assert SuffixDecodingCache().policy is None
