"""SwiftKV for Llama on vLLM 0.26.0.

SwiftKV (arXiv:2410.03960) lets a Llama compute the keys and values of its top
layers from one projection of the hidden state at a layer boundary
(``num_key_value_layers``). Prompt tokens then stop after the bottom layers:
their top-layer K/V are written straight into the KV cache, and only the tokens
that need logits run the top layers.

Modules, one job each:

* :mod:`.config` - the ``llama_swiftkv`` HF config and its validation;
* :mod:`.registration` - registers the config with ``AutoConfig`` and the model
  with vLLM's ``ModelRegistry`` (a plugin feature setup);
* :mod:`.kv_layout` - where K and V live in a layer's cache tensor, read from the
  attention backend;
* :mod:`.kv_write` - the bulk KV-cache write for the skipped layers (Triton
  kernel and PyTorch fallback);
* :mod:`.metadata` - attention metadata restricted to the logits tokens;
* :mod:`.model` - ``LlamaSwiftKVForCausalLM``;
* :mod:`.make_checkpoint` - random-weight SwiftKV checkpoints for tests and benches.
"""
